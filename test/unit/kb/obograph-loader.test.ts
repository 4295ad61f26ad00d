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

test('OBO-Graph JSON: a node, edge or meta list of the wrong type is a ParseError naming the file and the key', async () => {
  const tmp = tempDir();
  try {
    const node = (meta: unknown) => ({ id: 'http://purl.obolibrary.org/obo/HP_0000001', lbl: 'All', type: 'CLASS', meta });
    const cases: [string, unknown, RegExp][] = [
      ['a null node', { nodes: [null] }, /graphs\[0\]\.nodes\[0\]/],
      ['a null edge', { nodes: [node({})], edges: [node({}), null] }, /graphs\[0\]\.edges\[1\]/],
      ['synonyms that are a number', { nodes: [node({ synonyms: 5 })] }, /graphs\[0\]\.nodes\[0\]\.meta\.synonyms/],
      ['xrefs that are an object', { nodes: [node({ xrefs: {} })] }, /graphs\[0\]\.nodes\[0\]\.meta\.xrefs/],
      ['a null synonym', { nodes: [node({ synonyms: [null] })] }, /graphs\[0\]\.nodes\[0\]\.meta\.synonyms\[0\]/],
      ['a property value that is a string', { nodes: [node({ basicPropertyValues: ['x'] })] }, /graphs\[0\]\.nodes\[0\]\.meta\.basicPropertyValues\[0\]/],
    ];
    for (const [what, graph, key] of cases) {
      const file = tmp.file('bad.json', JSON.stringify({ graphs: [graph] }));
      await assert.rejects(readOboGraph(file), (e: unknown) => e instanceof ParseError && e.file === file && key.test(e.message), what);
    }
  } finally {
    tmp.cleanup();
  }
});

test('OBO-Graph JSON: a class with an empty id is a ParseError naming its key, not a concept without an id', async () => {
  const tmp = tempDir();
  try {
    for (const id of ['', '  ']) {
      const file = tmp.file('empty-id.json', JSON.stringify({ graphs: [{ nodes: [{ id: 'http://purl.obolibrary.org/obo/HP_0000001', lbl: 'All', type: 'CLASS' }, { id, lbl: 'Nameless', type: 'CLASS' }] }] }));
      await assert.rejects(readOboGraph(file), (e: unknown) => e instanceof ParseError && e.file === file && /graphs\[0\]\.nodes\[1\]\.id/.test(e.message), JSON.stringify(id));
    }
  } finally {
    tmp.cleanup();
  }
});
