import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ParseError } from '../../../src/kb/errors.ts';
import { readObo } from '../../../src/kb/obo-loader.ts';
import { ALL_SYNONYM_SCOPES } from '../../../src/kb/synonym-scope.ts';
import { collect, fixture, tempDir } from './fixtures.ts';

test('OBO: live terms with EXACT/RELATED synonyms, is_a, normalized xrefs, alt ids, def', async () => {
  const concepts = await collect(readObo(fixture('tiny.obo')));
  assert.deepEqual(concepts.map((c) => c.id), ['DOID:4', 'DOID:9351', 'DOID:9352'], 'obsolete term and Typedef skipped');
  const dm = concepts[1]!;
  assert.equal(dm.name, 'diabetes mellitus');
  assert.deepEqual(dm.synonyms, ['diabetes', 'sugar disease']);
  assert.deepEqual(dm.xrefs, ['MESH:D003920', 'UMLS:C0011849', 'SNOMEDCT_US:73211009']);
  assert.deepEqual(dm.altIds, ['DOID:11716']);
  assert.deepEqual(dm.parents, ['DOID:4']);
  assert.equal(dm.definition, 'A glucose metabolism disease characterized by "high" blood sugar.');
  const t2 = concepts[2]!;
  assert.deepEqual(t2.synonyms, ['NIDDM'], 'a synonym equal to the name is dropped; NARROW skipped');
  assert.deepEqual(t2.parents, ['DOID:9351', 'DOID:4']);
  assert.deepEqual(t2.xrefs, ['ICD10CM:E11', 'OMIM:125853']);
});

test('OBO: every scope on request', async () => {
  const concepts = await collect(readObo(fixture('tiny.obo'), { synonymScopes: ALL_SYNONYM_SCOPES }));
  assert.deepEqual(concepts[1]!.synonyms, ['diabetes', 'sugar disease', 'glucose disease']);
  assert.deepEqual(concepts[2]!.synonyms, ['NIDDM', 'adult onset diabetes']);
});

test('OBO: gzip is read transparently, with or without the .gz name', async () => {
  const plain = await collect(readObo(fixture('tiny.obo')));
  assert.deepEqual(await collect(readObo(fixture('tiny.obo.gz'))), plain);
  const tmp = tempDir();
  try {
    const { readFileSync } = await import('node:fs');
    const renamed = tmp.file('renamed.obo', readFileSync(fixture('tiny.obo.gz')));
    assert.deepEqual(await collect(readObo(renamed)), plain);
  } finally {
    tmp.cleanup();
  }
});

test('OBO: malformed lines are ParseErrors naming file and line', async () => {
  const tmp = tempDir();
  try {
    const noColon = tmp.file('a.obo', '[Term]\nid: X:1\nname: x\nthis line has no tag\n');
    await assert.rejects(collect(readObo(noColon)), (e: unknown) => e instanceof ParseError && e.line === 4 && e.file === noColon);
    const badSynonym = tmp.file('b.obo', '[Term]\nid: X:1\nname: x\nsynonym: "unterminated EXACT []\n');
    await assert.rejects(collect(readObo(badSynonym)), (e: unknown) => e instanceof ParseError && e.line === 4);
    const noId = tmp.file('c.obo', 'format-version: 1.2\n\n[Term]\nname: x\n');
    await assert.rejects(collect(readObo(noId)), (e: unknown) => e instanceof ParseError && e.line === 3);
  } finally {
    tmp.cleanup();
  }
});

test('OBO: a synonym without a scope is RELATED, also when its dbxref list follows the text directly', async () => {
  const tmp = tempDir();
  try {
    const file = tmp.file('scopes.obo', ['format-version: 1.4', '', '[Term]', 'id: DOID:1', 'name: foo disease', 'synonym: "bar syndrome" []', 'synonym: "baz" EXACT []', 'synonym: "qux" NARROW []', 'synonym: "quux"', ''].join('\n'));
    const [foo] = await collect(readObo(file));
    assert.deepEqual(foo!.synonyms, ['bar syndrome', 'baz', 'quux']);
  } finally {
    tmp.cleanup();
  }
});

test('OBO: unquoted values drop `! comment` and `{qualifiers}` and decode backslash escapes', async () => {
  const tmp = tempDir();
  try {
    const file = tmp.file(
      'unquoted.obo',
      [
        'format-version: 1.4',
        '',
        '[Term]',
        'id: DOID:1 ! foo disease',
        'name: foo disease ! a comment',
        '',
        '[Term]',
        'id: DOID:2',
        'name: Hodgkin\\, lymphoma type \\! 2 {source="x"} ! comment',
        'is_a: DOID:1{source="y"} ! foo disease',
        'alt_id: DOID:3 ! old',
        'xref: MESH:D006689 {source="z"}',
        '',
        '[Term]',
        'id: DOID:4',
        'name: a \\"quoted\\" back\\\\slash\\tand\\nbreak',
        '',
      ].join('\n'),
    );
    const [foo, hodgkin, quoted] = await collect(readObo(file));
    assert.equal(foo!.id, 'DOID:1');
    assert.equal(foo!.name, 'foo disease');
    assert.equal(hodgkin!.name, 'Hodgkin, lymphoma type ! 2');
    assert.deepEqual(hodgkin!.parents, ['DOID:1']);
    assert.deepEqual(hodgkin!.altIds, ['DOID:3']);
    assert.deepEqual(hodgkin!.xrefs, ['MESH:D006689']);
    assert.equal(quoted!.name, 'a "quoted" back\\slash and break');
  } finally {
    tmp.cleanup();
  }
});

test('OBO: an escaped `!` or space in an id is part of the id, not a comment or its end', async () => {
  const tmp = tempDir();
  try {
    const file = tmp.file('escaped-id.obo', ['[Term]', 'id: X:a\\!b ! comment', 'name: x', 'xref: Y:c\\ d', ''].join('\n'));
    const [x] = await collect(readObo(file));
    assert.equal(x!.id, 'X:a!b');
    assert.deepEqual(x!.xrefs, ['Y:c d']);
  } finally {
    tmp.cleanup();
  }
});
