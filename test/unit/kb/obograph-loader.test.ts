import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { ParseError } from '../../../src/kb/errors.ts';
import { readOboGraph } from '../../../src/kb/obograph-loader.ts';
import { fixture, tempDir } from './fixtures.ts';

test('OBO-Graph JSON: live classes, typed synonyms, xrefs, alt ids, is_a parents', async () => {
  const concepts = await readOboGraph(fixture('tiny-obograph.json'));
  assert.deepEqual(concepts.map((c) => c.id), ['HP:0000118', 'HP:0012638', 'HP:0001250']);
  const seizure = concepts[2]!;
  assert.equal(seizure.name, 'Seizure');
  assert.deepEqual(seizure.synonyms, ['Epileptic seizure', 'Epilepsy']);
  assert.deepEqual(seizure.xrefs, ['MESH:D004827', 'UMLS:C0014544', 'SNOMEDCT_US:91175000']);
  assert.deepEqual(seizure.altIds, ['HP:0001275']);
  assert.deepEqual(seizure.parents, ['HP:0012638'], 'only is_a edges');
  assert.equal(seizure.definition, 'An intermittent abnormality of nervous system physiology.');
  assert.deepEqual(concepts[1]!.parents, ['HP:0000118']);
});

test('OBO-Graph JSON: gzipped input and malformed JSON', async () => {
  const tmp = tempDir();
  try {
    const gz = tmp.file('hp.json.gz', gzipSync(readFileSync(fixture('tiny-obograph.json'))));
    assert.equal((await readOboGraph(gz)).length, 3);
    const bad = tmp.file('bad.json', '{"graphs": [\n{"nodes": [}\n]}');
    await assert.rejects(readOboGraph(bad), (e: unknown) => e instanceof ParseError && e.file === bad && e.line === 2);
    const notGraph = tmp.file('other.json', '{"a": 1}');
    await assert.rejects(readOboGraph(notGraph), /no "graphs" array/);
  } finally {
    tmp.cleanup();
  }
});

test('OBO-Graph JSON: a file saved with a UTF-8 BOM loads', async () => {
  const tmp = tempDir();
  try {
    const bom = tmp.file('bom.json', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), readFileSync(fixture('tiny-obograph.json'))]));
    assert.equal((await readOboGraph(bom)).length, 3);
  } finally {
    tmp.cleanup();
  }
});
