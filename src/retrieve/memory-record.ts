import { z } from 'zod';
import { InputError } from '../kb/errors.ts';

/**
 * One labelled mention the memory learned from: a coder's (or a corpus's) concept id(s) for a
 * mention text, with where and when the label came from. `seq` is the record's stable number in
 * its memory (also its prototype's HNSW label), so `cuilink memory remove --seq N` retracts one
 * label and every later snapshot keeps the numbering.
 */
export const memoryRecordSchema = z
  .object({
    seq: z.number().int().nonnegative(),
    /** The mention as written. */
    text: z.string().min(1),
    /** Optional note text around the mention (kept for review; never logged). */
    context: z.string().nullable().default(null),
    /** NER label of the mention. */
    label: z.string(),
    /** Normalized concept ids; a composite gold `A|B` keeps every id (each one is an acceptable link). */
    ids: z.array(z.string().min(1)).min(1),
    /** Where the label came from: `corpus:FILE`, `gold-topic`, `jsonl:FILE`, … */
    source: z.string(),
    /** Epoch milliseconds at which the label was recorded. */
    time: z.number().int().nonnegative(),
    noteId: z.string().nullable().default(null),
    mentionId: z.string().nullable().default(null),
  })
  .strict();

export type MemoryRecord = z.infer<typeof memoryRecordSchema>;
/** A record before the memory numbers it. */
export type NewMemoryRecord = Omit<z.input<typeof memoryRecordSchema>, 'seq'>;

export function parseMemoryRecord(value: unknown, where: string): MemoryRecord {
  const parsed = memoryRecordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(`${where}: field '${issue.path.join('.') || '(root)'}': ${issue.message}`, 'BAD_MEMORY');
  }
  return parsed.data;
}
