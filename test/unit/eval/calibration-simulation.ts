import type { ScoredMention } from '../../../src/eval/metrics/mention-record.ts';

/**
 * Seeded windows of links for the calibration test's tests: notes whose links come in groups of
 * one to four mentions of the same concept (a name repeated); a note's links share one uniform
 * draw u (right when u < truth(p)), as calibratedEce draws them (real notes' links are that alike:
 * bench/results/calibration-test-validity.txt).
 */
export interface SimulatedLink {
  noteId: string;
  concept: string;
  confidence: number;
  right: boolean;
}

/** Mostly confident links, as the shipped confidence gives them, with a spread tail. */
export function realisticConfidence(random: () => number): number {
  const r = random();
  if (r < 0.6) return 0.9 + 0.1 * random();
  if (r < 0.8) return 0.7 + 0.2 * random();
  return random();
}

export function simulateLinks(random: () => number, count: number, confidence: (random: () => number) => number, truth: (p: number) => number = (p) => p): SimulatedLink[] {
  const links: SimulatedLink[] = [];
  let note = 0;
  while (links.length < count) {
    const noteId = `n${note++}`;
    // A note of up to three groups; a group repeats one name (one confidence) one to four times.
    const groups = 1 + Math.floor(random() * 3);
    const u = random();
    for (let g = 0; g < groups && links.length < count; g++) {
      const p = confidence(random);
      const size = random() < 0.5 ? 1 : 2 + Math.floor(random() * 3);
      for (let k = 0; k < size && links.length < count; k++) links.push({ noteId, concept: `C${g}`, confidence: p, right: u < truth(p) });
    }
  }
  return links;
}

export function scoredLink(link: SimulatedLink, i = 0): ScoredMention {
  return {
    noteId: link.noteId, mentionId: `m${i}`, goldIds: [link.right ? link.concept : 'GOLD:other'], predicted: [link.concept], nil: false, topScore: link.confidence, confidence: link.confidence, label: 'Disease', semanticTypes: [],
    scores: { hit1: link.right, hit5: link.right, reciprocalRank: link.right ? 1 : 0, similarity: link.right ? 1 : 0, ndcg5: link.right ? 1 : 0, goldNil: false, predictedNil: false, confidence: link.confidence },
  };
}
