/** A note's deterministic draw in [0, 1) for a seed: the same in every run, process and order. */
export function noteDraw(noteId: string, seed: number): number {
  return fmix32(fnv1a32(`${seed}\u0000${noteId}`)) / 4294967296;
}

/**
 * MurmurHash3's finalizer. FNV-1a alone barely moves the high bits when only the last character
 * changes, so consecutive ids (2001, 2002, ...) drew nearly the same number: all or none sampled.
 */
function fmix32(hash: number): number {
  let h = hash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a, 32 bits, over UTF-16 code units: tiny, stable, well spread for short ids. */
function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** Seed of the learn/measure split of gold labels (independent of the gold-sampling seed). */
export const MEMORY_SPLIT_SEED = 20261124;

/**
 * Which stream a sampled note's gold labels feed: `learn` (the memory updater learns them) or
 * `measure` (the evaluator scores them). Decided per note id, so a note the memory learned from
 * is never scored, the same in every process and run.
 */
export function goldStream(noteId: string, learnFraction: number, seed = MEMORY_SPLIT_SEED): 'learn' | 'measure' {
  return noteDraw(noteId, seed) < learnFraction ? 'learn' : 'measure';
}
