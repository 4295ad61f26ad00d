import type { LinkedMention } from '../../link/types.ts';
import { confidenceFeatures, noteNeighbours, type ConceptFactsView } from '../../link/confidence-features.ts';
import { mentionKey, type GoldCorpus } from '../gold.ts';
import type { OfflineEvalResult } from '../offline-eval.ts';
import type { ScoredMention } from '../metrics/mention-record.ts';

/**
 * The calibrator's training examples from an offline evaluation: each linked mention's features
 * (with its note's other links, as the linker computes them) and whether its top-1 is right.
 * Mentions without candidates have nothing to be confident about and are left out. `label` is
 * the top-1 by default; the NIL part labels a mention by whether its concept was held out.
 * `indices[i]` is example i's position in `result` (its note, its linked mention).
 */
export function calibrationExamples(
  corpus: GoldCorpus,
  result: Pick<OfflineEvalResult, 'scored' | 'linked'>,
  facts: ConceptFactsView,
  label: (scored: ScoredMention) => boolean = (s) => s.scores.hit1,
  keep: (linked: LinkedMention) => boolean = () => true,
): { rows: Float64Array[]; labels: boolean[]; indices: number[] } {
  const texts = new Map(corpus.notes.flatMap((n) => n.mentions.map((m) => [mentionKey(n.noteId, m.id), m.text] as const)));
  const byNote = new Map<string, number[]>();
  result.scored.forEach((s, i) => {
    const list = byNote.get(s.noteId);
    if (list) list.push(i);
    else byNote.set(s.noteId, [i]);
  });
  const rows: Float64Array[] = [];
  const labels: boolean[] = [];
  const indices: number[] = [];
  for (const members of byNote.values()) {
    const mentions = members.map((i) => ({ linked: result.linked[i]!, text: texts.get(mentionKey(result.scored[i]!.noteId, result.scored[i]!.mentionId)) ?? '' }));
    const neighbours = noteNeighbours(mentions);
    mentions.forEach((m, k) => {
      if (m.linked.candidates.length === 0 || !keep(m.linked)) return;
      rows.push(confidenceFeatures(m.linked, m.text, facts, neighbours[k]));
      labels.push(label(result.scored[members[k]!]!));
      indices.push(members[k]!);
    });
  }
  return { rows, labels, indices };
}
