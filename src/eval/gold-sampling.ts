/**
 * Which notes are "labelled by coders": a deterministic draw per note id, so the same seed and
 * fraction pick the same notes in every run, process and order (gold-sample, tests, benchmarks).
 */
export function inGoldSample(noteId: string, fraction: number, seed: number): boolean {
  if (fraction >= 1) return true;
  if (fraction <= 0) return false;
  return fnv1a32(`${seed}\u0000${noteId}`) / 4294967296 < fraction;
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
