import { cpSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

// What the checksum tests of index and memory versions (test/unit/retrieve/*-checksums.test.ts)
// do alike: copy a version directory to damage it, and name its files wrongly in its manifest.

let copies = 0;

/** A fresh copy of the version directory `dir` beside it (damaged-0, damaged-1, …), for a test to damage or edit. */
export function copyBeside(dir: string): string {
  const copy = join(dirname(dir), `damaged-${copies++}`);
  cpSync(dir, copy, { recursive: true });
  return copy;
}

/**
 * What a hand edit could put in a version manifest's `files.*` for the version's own `file` that
 * is no bare file name: a path through the parent and an absolute path, both to the very bytes
 * of `source` (from a `copyBeside(source)`, so only the name is at fault), a subdirectory under
 * either separator, and names of no file at all.
 */
export function notBareFileNames(source: string, file: string): string[] {
  return [`../${basename(source)}/${file}`, join(source, file), `sub/${file}`, `sub\\${file}`, '..', '.', ''];
}
