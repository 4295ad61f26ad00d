import { z } from 'zod';
import { InputError } from '../kb/errors.ts';

const HEX64 = /^[0-9a-f]{64}$/;

/** What every record holds, with or without raw text: no field here is note text. */
const commonFields = {
  seq: z.number().int().nonnegative(),
  /** NER label of the mention. */
  label: z.string(),
  /** Normalized concept ids; a composite gold `A|B` keeps every id (each one is an acceptable link). */
  ids: z.array(z.string().min(1)).min(1),
  /** Where the label came from: `corpus:FILE`, `gold-topic`, `jsonl:FILE`, … */
  source: z.string(),
  /** Epoch milliseconds at which the label was recorded. */
  time: z.number().int().nonnegative(),
  /** The mention's id within its note (the gold's span id, or `start-end` offsets of a corpus). */
  mentionId: z.string().nullable().default(null),
};

/**
 * One labelled mention the memory learned from: a coder's (or a corpus's) concept id(s) for a
 * mention text, with where and when the label came from. `seq` is the record's stable number in
 * its memory (also its prototype's HNSW label), so `cuilink memory remove --seq N` retracts one
 * label and every later snapshot keeps the numbering.
 */
export const memoryRecordSchema = z
  .object({
    ...commonFields,
    /** The mention as written. */
    text: z.string().min(1),
    /** Optional note text around the mention (kept for review; never logged). */
    context: z.string().nullable().default(null),
    noteId: z.string().nullable().default(null),
  })
  .strict();

/**
 * The same label in a memory that keeps no raw text (manifest `rawText: false`, docs/memory.md):
 * the mention only as a keyed hash of its normalized surface, the note only as a keyed hash of its
 * id, no context. Keyed (HMAC-SHA256 with the memory's random salt): a plain hash of a short
 * surface ("AAPC", "breast cancer") is reversed by hashing a dictionary of candidate strings.
 */
export const hashedMemoryRecordSchema = z
  .object({
    ...commonFields,
    /** HMAC-SHA256 (hex) of the normalized mention text (memory-store.ts `surfaceKey`). */
    surfaceHash: z.string().regex(HEX64),
    /** HMAC-SHA256 (hex) of the note id; what `cuilink memory erase` and the updater's de-duplication match. */
    noteHash: z.string().regex(HEX64).nullable().default(null),
  })
  .strict();

export type RawMemoryRecord = z.infer<typeof memoryRecordSchema> & { surfaceHash?: undefined; noteHash?: undefined };
export type HashedMemoryRecord = z.infer<typeof hashedMemoryRecordSchema> & { text?: undefined; context?: undefined; noteId?: undefined };
/** A record as a memory holds it: raw (text, context, note id) or, without raw text, hashed. */
export type MemoryRecord = RawMemoryRecord | HashedMemoryRecord;
/** A record before the memory numbers it (always with its text: the learner encodes it; a no-raw-text memory hashes it on `add`). */
export type NewMemoryRecord = Omit<z.input<typeof memoryRecordSchema>, 'seq'>;

export function parseMemoryRecord(value: unknown, where: string, rawText = true): MemoryRecord {
  const parsed = (rawText ? memoryRecordSchema : hashedMemoryRecordSchema).safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const hint = !rawText && issue.code === 'unrecognized_keys' ? ' (this memory keeps no raw text: its records hold hashes only)' : '';
    throw new InputError(`${where}: field '${issue.path.join('.') || '(root)'}': ${issue.message}${hint}`, 'BAD_MEMORY');
  }
  return parsed.data as MemoryRecord;
}
