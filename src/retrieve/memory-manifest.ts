import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import { bareFileName, fileDigestSchema } from './manifest-files.ts';

export const MEMORY_FORMAT_VERSION = 1;
export const MEMORY_MANIFEST_FILE = 'manifest.json';

const memoryManifestSchema = z.object({
  format: z.literal('cuilink-memory'),
  formatVersion: z.literal(MEMORY_FORMAT_VERSION),
  /** The version directory's name; what linkers report as `memoryVersion`. */
  memoryVersion: z.string().min(1),
  /** Monotonic per memory root: each new snapshot is its parent's + 1. */
  sequence: z.number().int().nonnegative(),
  parent: z.string().nullable(),
  createdAt: z.string(),
  model: z.object({ id: z.string(), sha256: z.string(), dims: z.number().int().positive() }),
  hnsw: z.object({ m: z.number().int().positive(), efConstruction: z.number().int().positive(), efSearch: z.number().int().positive() }),
  counts: z.object({
    /** Live records (retracted ones are gone from records.jsonl). */
    records: z.number().int().nonnegative(),
    /** Next free `seq` (HNSW labels are never reused). */
    nextSeq: z.number().int().nonnegative(),
    surfaces: z.number().int().nonnegative(),
    concepts: z.number().int().nonnegative(),
  }),
  files: z.object({ records: bareFileName, prototypes: bareFileName }),
  /**
   * Size and SHA-256 of each file as the writer saved it, checked on open: the counts above cannot
   * tell two files of one shape apart (another memory's prototypes with the same nextSeq and
   * retractions) nor see damage that leaves the structure intact. Absent in versions written
   * before it: those are checked for shape only.
   */
  checksums: z.object({ records: fileDigestSchema, prototypes: fileDigestSchema }).optional(),
  /**
   * SHA-256 (hex) of every note id whose labels were erased (`cuilink memory erase`; with
   * `rawText: false` the keyed hash the records hold instead): carried from version to version so
   * the memory updater, which replays the gold topic, never learns them again.
   */
  erasedNotes: z.array(z.string().regex(/^[0-9a-f]{64}$/)).default([]),
  /**
   * false: the records keep no mention text, context or note id, only keyed hashes of the
   * normalized surface and of the note id (memory-record.ts). Set when the memory is created
   * (`memory add --no-raw-text`, `memory updater --no-raw-text`) and kept by every later writer;
   * a memory never mixes the two. Absent in memories written before the option: raw text.
   */
  rawText: z.boolean().default(true),
  /**
   * With `rawText: false`: the memory's random HMAC-SHA256 key (hex, 32 bytes), drawn once when the
   * memory is created and carried from version to version (every hash in every version uses it).
   */
  hashSalt: z.string().regex(/^[0-9a-f]{64}$/).optional(),
}).refine((m) => m.rawText || m.hashSalt !== undefined, { message: 'a memory without raw text needs its hashSalt', path: ['hashSalt'] });

export type MemoryManifest = z.infer<typeof memoryManifestSchema>;

export function readMemoryManifest(dir: string): MemoryManifest {
  const file = join(dir, MEMORY_MANIFEST_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file (create a memory with `cuilink memory add`)' : (error as Error).message;
    throw new InputError(`${file}: ${reason}`, 'BAD_MEMORY', error);
  }
  const parsed = memoryManifestSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(`${file}: field '${issue.path.join('.')}': ${issue.message}`, 'BAD_MEMORY');
  }
  return parsed.data;
}
