import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readBiosynDictionary } from '../../../src/kb/biosyn-loader.ts';
import { ParseError } from '../../../src/kb/errors.ts';
import { fixture, tempDir } from './fixtures.ts';

test('BioSyn dictionary: lines of one id merge; bare ids get prefixes; extra ids are alt ids', async () => {
  const concepts = await readBiosynDictionary(fixture('biosyn-tiny.txt'));
  assert.deepEqual(concepts.map((c) => c.id), ['MESH:D003920', 'MESH:D003924', 'OMIM:613097']);
  const t2 = concepts[1]!;
  assert.equal(t2.name, 'Diabetes Mellitus, Type 2');
  assert.deepEqual(t2.synonyms, ['NIDDM', 'Type 2 Diabetes']);
  assert.deepEqual(t2.altIds, ['OMIM:125853']);
  assert.deepEqual(concepts[0]!.synonyms, ['Diabetes']);
  assert.deepEqual(concepts[2]!.synonyms, ['STHAG6']);
});

test('BioSyn: a line without || is a ParseError naming file and line', async () => {
  const tmp = tempDir();
  try {
    const path = tmp.file('dict.txt', 'D000001||A\n\nD000002 B\n');
    await assert.rejects(readBiosynDictionary(path), (error: unknown) => error instanceof ParseError && error.line === 3 && error.message.startsWith(`${path}:3:`));
  } finally {
    tmp.cleanup();
  }
});
