import { noteDraw } from '../stream/label-selection/note-draw.ts';

// The draw and the learn/measure split live with the stream's label selector (which needs them
// and may not import eval); re-exported here for the evaluator's tools.
export { noteDraw, goldStream, MEMORY_SPLIT_SEED } from '../stream/label-selection/note-draw.ts';

/**
 * Which notes are "labelled by coders": a deterministic draw per note id, so the same seed and
 * fraction pick the same notes in every run, process and order (gold-sample, tests, benchmarks).
 */
export function inGoldSample(noteId: string, fraction: number, seed: number): boolean {
  if (fraction >= 1) return true;
  if (fraction <= 0) return false;
  return noteDraw(noteId, seed) < fraction;
}
