import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import { fileDigest, type FileDigest } from '../kb/file-digest.ts';
import { bareFileName, checkRecordedDigest, fileDigestSchema } from './manifest-files.ts';

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
    concepts: bareFileName,
    names: bareFileName,
    hnsw: bareFileName,
  }),
  /**
   * Size and SHA-256 of each file as the builder wrote it, checked on open and on activation: the
   * counts above cannot tell two files of one shape apart (the graph of another index of the same
   * names) nor see damage that leaves the structure intact. Absent in indexes built before it:
   * those are checked for shape only.
   */
  checksums: z.object({ concepts: fileDigestSchema, names: fileDigestSchema, hnsw: fileDigestSchema }).optional(),
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

type IndexFiles = IndexManifest['files'];
type IndexFileKey = keyof IndexFiles;
const INDEX_FILE_KEYS: readonly IndexFileKey[] = ['concepts', 'names', 'hnsw'];

/** What the builder records in `checksums`: the digest of each file it wrote into `dir`. */
export function indexFileDigests(dir: string, files: IndexFiles): Record<IndexFileKey, FileDigest> {
  return { concepts: fileDigest(join(dir, files.concepts)), names: fileDigest(join(dir, files.names)), hnsw: fileDigest(join(dir, files.hnsw)) };
}

/**
 * Checks an index's files against the sizes and SHA-256 its manifest recorded at build: every size
 * first (a stat each, so a partial copy is refused without hashing 100+ MB), then every hash. Every
 * open pays for the hashes (about 0.1 s on a 74k-name, 133 MB index; deploy/README.md) so that no
 * way to an index (a pinned version directory, a file damaged after activation) skips them.
 * false: an index built before checksums, nothing to check against.
 */
export function verifyIndexFiles(dir: string, manifest: IndexManifest): boolean {
  const recorded = manifest.checksums;
  if (recorded === undefined) return false;
  const refusal = { code: 'BAD_INDEX', changed: 'the file changed after the index was built (damage, a partial copy, or a file of another index)' };
  for (const key of INDEX_FILE_KEYS) checkRecordedDigest(join(dir, manifest.files[key]), recorded[key], refusal, { sizeOnly: true });
  for (const key of INDEX_FILE_KEYS) checkRecordedDigest(join(dir, manifest.files[key]), recorded[key], refusal);
  return true;
}
