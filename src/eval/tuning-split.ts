import { InputError } from '../kb/errors.ts';
import { noteDraw } from './gold-sampling.ts';

/**
 * The fixed tuning split of a training corpus (NCBI-disease train): every default, weight,
 * threshold and model is chosen on the `tune` part; `learn` is the rest (what a memory or a
 * fine-tune may learn from); dev stays held out for reporting. The `size` documents with the
 * smallest draw for the seed form `tune`, so the split is the same in every run, process and
 * file order, and exactly `size` documents large.
 */
export const TUNING_SPLIT_SEED = 20261123;
export const TUNING_SPLIT_SIZE = 100;

export type SplitPart = 'tune' | 'learn';

export interface TuningSplitOptions {
  seed?: number;
  size?: number;
  /** The corpus file the documents come from: a split refused names it. */
  source?: string;
}

/** The document ids of the tune part. */
export function tuneDocumentIds(documentIds: readonly string[], options: TuningSplitOptions = {}): Set<string> {
  const seed = options.seed ?? TUNING_SPLIT_SEED;
  const size = options.size ?? TUNING_SPLIT_SIZE;
  const unique = [...new Set(documentIds)];
  if (size >= unique.length) throw new InputError(`${options.source === undefined ? '' : `${options.source}: `}tuning split of ${size} documents needs more than ${unique.length} documents`, 'BAD_SPLIT');
  const ranked = unique.map((id) => ({ id, draw: noteDraw(id, seed) })).sort((a, b) => a.draw - b.draw || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return new Set(ranked.slice(0, size).map((r) => r.id));
}

/** Keeps the items of one part of the split, given each item's document id. */
export function selectSplit<T>(items: readonly T[], documentIdOf: (item: T) => string, part: SplitPart, options: TuningSplitOptions = {}): T[] {
  const tune = tuneDocumentIds(items.map(documentIdOf), options);
  return items.filter((item) => tune.has(documentIdOf(item)) === (part === 'tune'));
}

export function parseSplitPart(value: string | undefined): SplitPart | undefined {
  if (value === undefined) return undefined;
  if (value === 'tune' || value === 'learn') return value;
  throw new InputError(`--split must be tune or learn, not ${JSON.stringify(value)}`, 'BAD_FLAGS');
}
