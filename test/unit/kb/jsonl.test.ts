import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ParseError } from '../../../src/kb/errors.ts';
import { conceptFromJsonLine, conceptToJsonLine } from '../../../src/kb/jsonl-format.ts';
import { readConceptJsonl } from '../../../src/kb/jsonl-loader.ts';
import { writeConceptJsonlFile } from '../../../src/kb/jsonl-writer.ts';
import { loadKb } from '../../../src/kb/load.ts';
import { collect, fixture, tempDir } from './fixtures.ts';

test('JSONL reader: defaults, normalized ids, deduped names, blank lines skipped', async () => {
  const concepts = await collect(readConceptJsonl(fixture('tiny.jsonl')));
  assert.equal(concepts.length, 3);
  assert.deepEqual(concepts[1], { id: 'MESH:D044882', name: 'Endocrine System Diseases', synonyms: [], semanticTypes: [], parents: [], xrefs: [], altIds: [] });
  assert.deepEqual(concepts[2]!.synonyms, ['STHAG6']);
  assert.equal(concepts[0]!.definition, 'A metabolic disease.');
});

test('JSONL line format is canonical and round-trips', () => {
  const c = { id: 'X:1', name: 'n "q"', synonyms: ['a'], semanticTypes: [], parents: ['X:0'], xrefs: [], altIds: ['X:2'], definition: 'd' };
  const line = conceptToJsonLine(c);
  assert.equal(line, '{"id":"X:1","name":"n \\"q\\"","synonyms":["a"],"semanticTypes":[],"parents":["X:0"],"xrefs":[],"altIds":["X:2"],"definition":"d"}');
  assert.deepEqual(conceptFromJsonLine(line), c);
  const named = { ...c, xrefNames: ['nephropathy'] };
  const namedLine = conceptToJsonLine(named);
  assert.equal(namedLine, line.replace(',"definition"', ',"xrefNames":["nephropathy"],"definition"'), 'xrefNames only when there are some');
  assert.deepEqual(conceptFromJsonLine(namedLine), named);
  assert.equal(conceptToJsonLine({ ...c, xrefNames: [] }), line);
});

test('JSONL: malformed lines name file and line', async () => {
  const tmp = tempDir();
  try {
    const cases: Array<[string, RegExp]> = [
      ['{"id":"X:1","name":"a"}\n{not json}\n', /not JSON/],
      ['{"id":"X:1","name":"a"}\n[1,2]\n', /not a JSON object/],
      ['{"id":"X:1","name":"a"}\n{"name":"no id"}\n', /"id"/],
      ['{"id":"X:1","name":"a"}\n{"id":"X:2","name":"b","synonyms":"c"}\n', /"synonyms" must be an array of strings/],
    ];
    for (const [i, [content, reason]] of cases.entries()) {
      const path = tmp.file(`bad${i}.jsonl`, content);
      await assert.rejects(collect(readConceptJsonl(path)), (e: unknown) => e instanceof ParseError && e.line === 2 && e.message.startsWith(`${path}:2:`) && reason.test(e.message));
    }
  } finally {
    tmp.cleanup();
  }
});

test('export → load round trip reproduces the store and its checksum', async () => {
  const tmp = tempDir();
  try {
    const store = await loadKb([fixture('ctd-tiny.tsv'), fixture('tiny.obo'), fixture('tiny-obograph.json'), fixture('umls/MRCONSO.RRF')]);
    const out = `${tmp.dir}/kb.jsonl`;
    assert.equal(await writeConceptJsonlFile(store.sorted(), out), store.size);
    const again = await loadKb([out]);
    assert.equal(again.size, store.size);
    assert.equal(again.nameCount, store.nameCount);
    assert.deepEqual(again.sorted(), store.sorted());
    assert.equal(again.checksum(), store.checksum());
    const { createHash } = await import('node:crypto');
    assert.equal(createHash('sha256').update(readFileSync(out)).digest('hex'), store.checksum(), 'checksum = sha256 of the exported file');
  } finally {
    tmp.cleanup();
  }
});

test('export → load round trip resolves an alt id that two concepts claim to the same concept', async () => {
  const tmp = tempDir();
  try {
    const store = await loadKb([fixture('ctd-shared-alt.tsv')]);
    const out = `${tmp.dir}/kb.jsonl`;
    await writeConceptJsonlFile(store.sorted(), out);
    const again = await loadKb([out]);
    for (const alt of ['DOID:14450', 'DOID:0050439']) assert.equal(again.resolveId(alt), store.resolveId(alt), alt);
  } finally {
    tmp.cleanup();
  }
});

test('JSONL: a misspelt field is a ParseError naming it, not silently dropped data', async () => {
  const tmp = tempDir();
  try {
    const path = tmp.file('typo.jsonl', '{"id":"X:1","name":"a"}\n{"id":"X:2","name":"b","synonym":["bee"]}\n');
    await assert.rejects(collect(readConceptJsonl(path)), (e: unknown) => e instanceof ParseError && e.line === 2 && /unknown field "synonym"/.test(e.message));
  } finally {
    tmp.cleanup();
  }
});

test('JSONL: a whitespace-only name is a ParseError naming file and line; a whitespace-only synonym is dropped like an empty one (as the other loaders drop blank synonyms)', async () => {
  const tmp = tempDir();
  try {
    for (const [i, name] of [' ', '\t \u00a0'].entries()) {
      const path = tmp.file(`blank-name${i}.jsonl`, `{"id":"X:1","name":"a"}\n${JSON.stringify({ id: 'X:2', name })}\n`);
      await assert.rejects(collect(readConceptJsonl(path)), (e: unknown) => e instanceof ParseError && e.line === 2 && e.message === `${path}:2: missing or empty "name"`, JSON.stringify(name));
    }
    const path = tmp.file('blank-synonym.jsonl', `${JSON.stringify({ id: 'X:1', name: 'a', synonyms: ['  ', 'b', '', '\t', ' c '] })}\n`);
    const [concept] = await collect(readConceptJsonl(path));
    // A name with spaces around it is a name and stays as written (JSONL values are not trimmed).
    assert.deepEqual(concept!.synonyms, ['b', ' c ']);
  } finally {
    tmp.cleanup();
  }
});

test('JSONL: whitespace-only xrefNames are dropped like blank synonyms; a concept left with none has no xrefNames (and writes none back)', async () => {
  const tmp = tempDir();
  try {
    const path = tmp.file('blank-xref-names.jsonl', [
      JSON.stringify({ id: 'X:1', name: 'a', xrefNames: ['  ', 'nephropathy', '', '\t', ' kidney disease '] }),
      JSON.stringify({ id: 'X:2', name: 'b', xrefNames: [' ', '\u00a0'] }),
      '',
    ].join('\n'));
    const [named, blank] = await collect(readConceptJsonl(path));
    // A name with spaces around it is a name and stays as written, as synonyms do.
    assert.deepEqual(named!.xrefNames, ['nephropathy', ' kidney disease ']);
    assert.equal(blank!.xrefNames, undefined);
    assert.equal(conceptToJsonLine(blank!), '{"id":"X:2","name":"b","synonyms":[],"semanticTypes":[],"parents":[],"xrefs":[],"altIds":[]}');
  } finally {
    tmp.cleanup();
  }
});
