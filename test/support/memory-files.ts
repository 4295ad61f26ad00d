import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../src/kb/errors.ts';
import { MemoryStore } from '../../src/retrieve/memory-store.ts';
import type { NewMemoryRecord } from '../../src/retrieve/memory-record.ts';
import { TrigramEncoder, lowerNormalize } from './trigram-encoder.ts';

/** The encoder, model identity and labels of the tests that save memory versions and damage them. */
export const encoder = new TrigramEncoder();
export const MODEL = { id: 'test-trigram-encoder', sha256: 'd'.repeat(64), dims: encoder.dims };
/** A Disease label of one concept from a note named after its text. */
export const label = (text: string, id: string): NewMemoryRecord => ({ text, label: 'Disease', ids: [id], source: 'test', time: 1, noteId: `note-${text}` });

/** Rewrites a version's manifest.json as `edit` leaves the parsed object (a hand edit). */
export function editManifest<M = Record<string, unknown>>(dir: string, edit: (manifest: M) => void): void {
  const file = join(dir, 'manifest.json');
  const manifest = JSON.parse(readFileSync(file, 'utf8')) as M;
  edit(manifest);
  writeFileSync(file, JSON.stringify(manifest));
}

/** Opening the version fails with BAD_MEMORY, its message matching every pattern. */
export function refused(dir: string, ...patterns: RegExp[]): void {
  assert.throws(
    () => MemoryStore.open(dir, lowerNormalize),
    (e: unknown) => {
      assert.ok(e instanceof InputError, `an InputError, not ${String(e)}`);
      assert.equal(e.code, 'BAD_MEMORY');
      for (const pattern of patterns) assert.match(e.message, pattern);
      return true;
    },
  );
}
