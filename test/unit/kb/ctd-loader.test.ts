import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readCtdDiseases } from '../../../src/kb/ctd-loader.ts';
import { ParseError } from '../../../src/kb/errors.ts';
import { collect, fixture, tempDir } from './fixtures.ts';

test('CTD MEDIC rows become concepts with alt ids, parents, synonyms and slim mappings', async () => {
  const concepts = await collect(readCtdDiseases(fixture('ctd-tiny.tsv')));
  assert.deepEqual(concepts.map((c) => c.id), ['MESH:C', 'MESH:D003920', 'MESH:D044882', 'MESH:D003924', 'OMIM:613097']);
  const dm = concepts[1]!;
  assert.equal(dm.name, 'Diabetes Mellitus');
  assert.deepEqual(dm.synonyms, ['Diabetes'], 'the preferred name is not repeated as a synonym');
  assert.deepEqual(dm.altIds, ['DOID:9351']);
  assert.deepEqual(dm.parents, ['MESH:D044882']);
  assert.deepEqual(dm.semanticTypes, ['Metabolic disease']);
  assert.equal(dm.definition, 'A heterogeneous group of disorders.');
  const t2 = concepts[3]!;
  assert.deepEqual(t2.altIds, ['OMIM:125853'], 'an alt id equal to the id is dropped');
  assert.deepEqual(t2.semanticTypes, ['Metabolic disease', 'Endocrine system disease']);
  assert.equal(concepts[0]!.definition, undefined);
  assert.deepEqual(concepts[0]!.parents, []);
});

test('CTD: a row without an id is a ParseError naming file and line', async () => {
  const tmp = tempDir();
  try {
    const path = tmp.file('bad.tsv', '# comment\nGood\tMESH:D1\t\t\t\t\t\t\t\nNo id here\n');
    await assert.rejects(collect(readCtdDiseases(path)), (error: unknown) => {
      assert.ok(error instanceof ParseError);
      assert.equal(error.file, path);
      assert.equal(error.line, 3);
      assert.match(error.message, /bad\.tsv:3: /);
      return true;
    });
  } finally {
    tmp.cleanup();
  }
});
