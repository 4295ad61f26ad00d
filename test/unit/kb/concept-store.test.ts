import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConceptStore } from '../../../src/kb/concept-store.ts';
import { newConcept } from '../../../src/kb/concept-builder.ts';
import { loadKb } from '../../../src/kb/load.ts';
import { fixture } from './fixtures.ts';

test('store: get by id, alt id and raw id; size and nameCount', async () => {
  const store = await loadKb([fixture('ctd-tiny.tsv')]);
  assert.equal(store.size, 5);
  assert.equal(store.nameCount, 5 + 1 + 1 + 2 + 1);
  assert.equal(store.get('MESH:D003920')?.name, 'Diabetes Mellitus');
  assert.equal(store.get('D003920')?.id, 'MESH:D003920', 'raw gold ids are normalized');
  assert.equal(store.get('DOID:9351')?.id, 'MESH:D003920', 'alt ids resolve');
  assert.equal(store.resolveId('OMIM:125853'), 'MESH:D003924');
  assert.ok(store.has('OMIM:613097'));
  assert.ok(!store.has('MESH:D999999'));
  assert.equal([...store].length, 5);
});

test('store: the same id from two files merges names, parents, xrefs and alt ids', async () => {
  const store = await loadKb([fixture('ctd-tiny.tsv'), fixture('tiny.jsonl'), fixture('biosyn-tiny.txt')]);
  const dm = store.get('MESH:D003920')!;
  assert.equal(dm.name, 'Diabetes Mellitus', 'first preferred name wins');
  assert.deepEqual(dm.synonyms, ['Diabetes', 'DM']);
  assert.deepEqual(dm.parents, ['MESH:D044882']);
  assert.deepEqual(dm.xrefs, ['UMLS:C0011849']);
  assert.deepEqual(dm.semanticTypes, ['Metabolic disease', 'T047']);
  assert.equal(dm.definition, 'A heterogeneous group of disorders.');
  const tooth = store.get('OMIM:613097')!;
  assert.deepEqual(tooth.altIds, ['MESH:C567755']);
  assert.equal(store.get('MESH:C567755')?.id, 'OMIM:613097');
  assert.equal(store.nameCount, [...store].reduce((n, c) => n + 1 + c.synonyms.length, 0));
});

test('store checksum: independent of insertion order, sensitive to content', () => {
  const a = newConcept('X:1', 'one');
  const b = newConcept('X:2', 'two');
  const first = ConceptStore.from([structuredClone(a), structuredClone(b)]);
  const second = ConceptStore.from([structuredClone(b), structuredClone(a)]);
  assert.equal(first.checksum(), second.checksum());
  assert.match(first.checksum(), /^[0-9a-f]{64}$/);
  second.add({ ...newConcept('X:2', 'two'), synonyms: ['deux'] });
  assert.notEqual(first.checksum(), second.checksum());
});

test('store: an alt id that is another concept\'s own id is not kept as an alt id, whichever comes first', () => {
  const claims = () => ({ ...newConcept('X:1', 'one'), altIds: ['X:2', 'X:9'] });
  const alsoClaims = () => ({ ...newConcept('X:3', 'three'), altIds: ['X:2'] });
  for (const order of [[claims(), alsoClaims(), newConcept('X:2', 'two')], [newConcept('X:2', 'two'), claims(), alsoClaims()]]) {
    const store = ConceptStore.from(order);
    assert.equal(store.resolveId('X:2'), 'X:2');
    assert.deepEqual(store.get('X:1')!.altIds, ['X:9'], 'X:2 denotes its own concept, not X:1');
    assert.deepEqual(store.get('X:3')!.altIds, [], 'nor the second concept that claimed it');
    store.add({ ...newConcept('X:1', 'one'), altIds: ['X:2'] });
    assert.deepEqual(store.get('X:1')!.altIds, ['X:9'], 'also when a second file repeats the claim');
  }
});

test('store: an alt id that several concepts claim resolves to the same one whatever the order they came in', () => {
  // CTD lists one DOID id under several diseases; the export (sorted by id) must read back resolving it alike.
  const later = () => ({ ...newConcept('OMIM:400045', 'sex reversal'), altIds: ['DOID:14450'] });
  const earlier = () => ({ ...newConcept('MESH:D023961', 'gonadal dysgenesis'), altIds: ['DOID:14450'] });
  for (const order of [[later(), earlier()], [earlier(), later()]]) {
    const store = ConceptStore.from(order);
    assert.equal(store.resolveId('DOID:14450'), 'MESH:D023961', order.map((c) => c.id).join(' then '));
    assert.deepEqual(store.get('OMIM:400045')!.altIds, ['DOID:14450'], 'both keep the alt id (a gold DOID:14450 is a hit for either)');
  }
});
