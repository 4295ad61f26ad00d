import { z } from 'zod';

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
