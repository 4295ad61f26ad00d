import { statSync } from 'node:fs';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import { digestOf, fileDigest, type FileDigest } from '../kb/file-digest.ts';

/**
 * An index's or a memory version's files lie in its own directory: a name with a separator, '.' or
 * '..' (a hand edit) would have a reader open another version's files, or any file, as its own.
 */
export const bareFileName = z.string().refine(
  (name) => name !== '' && name !== '.' && name !== '..' && !/[/\\\0]/.test(name),
  (name) => ({ message: `${JSON.stringify(name)} is not a bare file name (a manifest's files lie in its own directory: no '/', '\\', '.' or '..')` }),
);

/** A file's size and SHA-256 (src/kb/file-digest.ts) as its writer recorded them in a manifest. */
export const fileDigestSchema = z.object({ bytes: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/) });

/**
 * Refuses a file whose size or SHA-256 differs from what its manifest recorded (`content`: bytes
 * already read for parsing, so those are the bytes checked; `sizeOnly`: a stat, to refuse a
 * partial copy before hashing anything). No record: written before checksums, nothing to check.
 */
export function checkRecordedDigest(file: string, recorded: FileDigest | undefined, refusal: { code: string; changed: string }, options: { content?: Uint8Array; sizeOnly?: boolean } = {}): void {
  if (recorded === undefined) return;
  let actual: { bytes: number; sha256?: string };
  try {
    actual = options.content !== undefined ? digestOf(options.content) : options.sizeOnly ? { bytes: statSync(file).size } : fileDigest(file);
  } catch (error) {
    throw new InputError(`${file}: ${(error as Error).message}`, refusal.code, error);
  }
  if (actual.bytes !== recorded.bytes) throw new InputError(`${file}: ${actual.bytes} bytes; the manifest recorded ${recorded.bytes} bytes: ${refusal.changed}`, refusal.code);
  if (actual.sha256 !== undefined && actual.sha256 !== recorded.sha256) throw new InputError(`${file}: sha256 ${actual.sha256}; the manifest recorded sha256 ${recorded.sha256}: ${refusal.changed}`, refusal.code);
}
