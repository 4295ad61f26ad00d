import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';

export const INDEX_FORMAT_VERSION = 1;

const indexManifestSchema = z.object({
  formatVersion: z.literal(INDEX_FORMAT_VERSION),
  indexVersion: z.string().min(1),
  createdAt: z.string(),
  kb: z.object({
    sources: z.array(z.string()),
    checksum: z.string(),
    concepts: z.number().int().nonnegative(),
  }),
  model: z.object({
    id: z.string(),
    /** As given at build time; the linker may be pointed at another copy of the same model. */
    path: z.string(),
    sha256: z.string(),
    precision: z.string(),
    dims: z.number().int().positive(),
  }),
  hnsw: z.object({
    space: z.literal('ip'),
    m: z.number().int().positive(),
    efConstruction: z.number().int().positive(),
    efSearch: z.number().int().positive(),
    randomSeed: z.number().int(),
  }),
  counts: z.object({
    concepts: z.number().int().nonnegative(),
    names: z.number().int().nonnegative(),
    exactKeys: z.number().int().nonnegative(),
  }),
  timings: z.object({
    totalSeconds: z.number(),
    encodeSeconds: z.number(),
    namesPerSecond: z.number(),
  }),
  files: z.object({
    concepts: z.string(),
    names: z.string(),
    hnsw: z.string(),
  }),
});

export type IndexManifest = z.infer<typeof indexManifestSchema>;

export const INDEX_MANIFEST_FILE = 'manifest.json';

export function readIndexManifest(dir: string): IndexManifest {
  const file = join(dir, INDEX_MANIFEST_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file (is this an index directory? build one with `cuilink index build`)' : (error as Error).message;
    throw new InputError(`${file}: ${reason}`, 'BAD_INDEX', error);
  }
  const parsed = indexManifestSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(`${file}: field '${issue.path.join('.')}': ${issue.message}`, 'BAD_INDEX');
  }
  return parsed.data;
}
