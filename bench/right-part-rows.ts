// The right part's calibration rows of one part of the tuning split, as the issue-24 out-of-fold scripts
// (familiarity-oof.ts, bagged-oof.ts) score them: natural links, no memory rows, the shipped models.
import { loadPubTatorCorpus, mentionKey } from '../src/eval/gold.ts';
import { kbOntologyView, loadIndexKb } from '../src/eval/kb-ontology-view.ts';
import { evaluateCorpus, keepSplitPart } from '../src/eval/offline-eval.ts';
import { calibrationExamples } from '../src/eval/confidence/calibration-examples.ts';
import { conceptGroup } from '../src/eval/confidence/concept-fold-platt.ts';
import { summarizeConfidence } from '../src/eval/confidence/selective-metrics.ts';
import { TUNING_SPLIT_SEED } from '../src/eval/tuning-split.ts';
import { ConceptFacts } from '../src/link/concept-facts.ts';
import { openLinker } from '../src/link/open-linker.ts';
import { normalizeName } from '../src/text/normalize.ts';

export type Row = { note: string; x: number[]; label: boolean; top: string; concept: string; surface: string };
export type Gold = { note: string; gold: string[]; concept: string; surface: string };

/** The shipped right-part recipe (docs/confidence.md). */
export const RECIPE_TREES = { rounds: 200, depth: 3, minLeaf: 40, rate: 0.05, l2: 1 };

export async function rightPartRows(indexDir: string, corpusFile: string, part: 'learn' | 'tune'): Promise<{ rows: Row[]; gold: Gold[] }> {
  const store = await loadIndexKb(indexDir);
  const facts = new ConceptFacts([...store.values()]);
  const corpus = await loadPubTatorCorpus(corpusFile);
  keepSplitPart(corpus, part, TUNING_SPLIT_SEED);
  const linker = await openLinker({ indexDir, calibration: false, memoryPollMs: 0, log: () => {} });
  const result = await evaluateCorpus(linker, corpus, kbOntologyView(store));
  await linker.close();
  const { rows, labels, indices } = calibrationExamples(corpus, result, facts);
  const texts = new Map(corpus.notes.flatMap((n) => n.mentions.map((m) => [mentionKey(n.noteId, m.id), normalizeName(m.text)] as const)));
  const surface = (s: { noteId: string; mentionId: string }) => texts.get(mentionKey(s.noteId, s.mentionId)) ?? '';
  return {
    rows: rows.map((x, i) => {
      const s = result.scored[indices[i]!]!;
      return { note: s.noteId, x: [...x], label: labels[i]!, top: s.predicted[0] ?? '', concept: conceptGroup(s), surface: surface(s) };
    }),
    gold: result.scored.map((s) => ({ note: s.noteId, gold: [...s.goldIds], concept: conceptGroup(s), surface: surface(s) })),
  };
}

/** AUROC, precision at 80% and ECE, a note's links to one top-1 concept drawn together (as `cuilink eval`). */
export function summarizeRows(rows: readonly Row[], confidence: readonly number[]) {
  return summarizeConfidence(rows.map((r, i) => ({ confidence: confidence[i]!, correct: r.label, group: `${r.note}\u0000${r.top}` })));
}
