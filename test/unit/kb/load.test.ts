import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { InputError, ParseError } from '../../../src/kb/errors.ts';
import { detectKbFormat } from '../../../src/kb/kb-format.ts';
import { loadKb } from '../../../src/kb/load.ts';
import { fixture, tempDir } from './fixtures.ts';

test('format detection by name and by content', async () => {
  assert.equal(await detectKbFormat(fixture('umls/MRCONSO.RRF')), 'umls');
  assert.equal(await detectKbFormat(fixture('tiny.obo')), 'obo');
  assert.equal(await detectKbFormat(fixture('tiny.obo.gz')), 'obo');
  assert.equal(await detectKbFormat(fixture('tiny-obograph.json')), 'obograph');
  assert.equal(await detectKbFormat(fixture('ctd-tiny.tsv')), 'ctd');
  assert.equal(await detectKbFormat(fixture('biosyn-tiny.txt')), 'biosyn');
  assert.equal(await detectKbFormat(fixture('tiny.jsonl')), 'jsonl');
  const tmp = tempDir();
  try {
    assert.equal(await detectKbFormat(tmp.file('doid', readFileSync(fixture('tiny.obo.gz')))), 'obo');
    assert.equal(await detectKbFormat(tmp.file('kb.data', readFileSync(fixture('tiny.jsonl')))), 'jsonl');
    assert.equal(await detectKbFormat(tmp.file('medic.gz', gzipSync(readFileSync(fixture('ctd-tiny.tsv'))))), 'ctd');
    assert.equal(await detectKbFormat(tmp.file('graph.bin', readFileSync(fixture('tiny-obograph.json')))), 'obograph');
    await assert.rejects(detectKbFormat(tmp.file('what.txt', 'hello\nworld\n')), InputError);
    await assert.rejects(detectKbFormat(fixture('umls/MRREL.RRF')), /pass MRCONSO\.RRF/);
  } finally {
    tmp.cleanup();
  }
});

test('loadKb: several formats into one store, explicit format wins', async () => {
  const store = await loadKb([fixture('ctd-tiny.tsv'), fixture('tiny.obo.gz'), fixture('tiny-obograph.json'), fixture('biosyn-tiny.txt')]);
  assert.equal(store.size, 5 + 3 + 3);
  const seen: string[] = [];
  await loadKb([fixture('umls/MRCONSO.RRF'), fixture('umls/MRSTY.RRF'), fixture('umls/MRREL.RRF')], { onFile: (p, f, n) => seen.push(`${f}:${n}`) });
  assert.deepEqual(seen, ['umls:6'], 'side tables passed with MRCONSO are read through it');
  const forced = await loadKb([fixture('biosyn-tiny.txt')], { format: 'biosyn' });
  assert.equal(forced.size, 3);
});

test('loadKb: missing file is an InputError with a one-line reason; nothing is read first', async () => {
  await assert.rejects(loadKb([fixture('tiny.obo'), '/nonexistent/kb.obo']), (e: unknown) => e instanceof InputError && !(e instanceof ParseError) && e.message === 'cannot read /nonexistent/kb.obo: no such file');
  await assert.rejects(loadKb([]), InputError);
});

test('loadKb: a truncated gzip is an InputError, not a hang or a crash', async () => {
  const tmp = tempDir();
  try {
    const gz = gzipSync(readFileSync(fixture('tiny.obo')).toString().repeat(50));
    const path = tmp.file('cut.obo.gz', gz.subarray(0, Math.floor(gz.length / 2)));
    await assert.rejects(loadKb([path]), (e: unknown) => e instanceof InputError && /cut\.obo\.gz/.test(e.message));
  } finally {
    tmp.cleanup();
  }
});

test('loadKb: CRLF line ends and a UTF-8 BOM are tolerated', async () => {
  const tmp = tempDir();
  try {
    const path = tmp.file('win.jsonl', '\ufeff{"id":"X:1","name":"a"}\r\n{"id":"X:2","name":"b"}\r\n');
    const store = await loadKb([path]);
    assert.deepEqual([...store].map((c) => `${c.id}=${c.name}`), ['X:1=a', 'X:2=b']);
  } finally {
    tmp.cleanup();
  }
});

test('loadKb: ParseError from any loader names file and line', async () => {
  const tmp = tempDir();
  try {
    const path = tmp.file('bad.jsonl', '{"id":"X:1","name":"a"}\n\n{"id":"X:2"}\n');
    await assert.rejects(loadKb([path]), (e: unknown) => e instanceof ParseError && e.file === path && e.line === 3);
  } finally {
    tmp.cleanup();
  }
});

test('loadKb: a supplement adds only the concepts whose ids and alt ids the KB does not know', async () => {
  const seen: string[] = [];
  const store = await loadKb([fixture('ctd-tiny.tsv')], { supplements: [fixture('biosyn-older-release.txt')], onFile: (p, f, n) => seen.push(`${f}:${n}`) });
  assert.deepEqual(seen, ['ctd:5', 'biosyn:1'], 'the supplement reports the concepts it added');
  assert.equal(store.size, 5 + 1);
  const retired = store.get('OMIM:613825');
  assert.ok(retired, 'an id the KB lacks is added');
  assert.equal(retired.name, 'COMPLEMENT COMPONENT 9 DEFICIENCY');
  assert.deepEqual(retired.synonyms, ['C9D', 'C9 DEFICIENCY'], 'two lines of one supplement with the same id are one concept');
  assert.ok(!store.get('MESH:D003920')!.synonyms.includes('Sugar Diabetes'), 'a concept the KB has keeps its own names');
  assert.equal(store.get('MESH:C565165'), undefined, 'a concept whose alt id (OMIM:125853) the KB knows is left out');
  await assert.rejects(loadKb([fixture('ctd-tiny.tsv')], { supplements: ['/nonexistent/old.txt'] }), (e: unknown) => e instanceof InputError && e.message === 'cannot read /nonexistent/old.txt: no such file');
});

test('loadKb: an xref-name source gives names only to the one KB concept its id or xrefs lead to', async () => {
  const seen: string[] = [];
  const store = await loadKb([fixture('ctd-tiny.tsv')], { xrefNameSources: [fixture('xref-names-other.obo')], onFile: (p, f, n) => seen.push(`${f}:${n}`) });
  assert.deepEqual(seen, ['ctd:5', 'obo:3'], 'the source reports the KB concepts it gave names');
  assert.equal(store.size, 5, 'no concept of the source is added');
  assert.deepEqual(store.get('MESH:D003920')!.xrefNames, ['sugar diabetes'], "by the source's own id, a KB alt id (DO:DOID:9351); a name the concept has is skipped");
  assert.deepEqual(store.get('MESH:D044882')!.xrefNames, ['endocrine gland disease', 'endocrinopathy'], 'by an xref');
  assert.deepEqual(store.get('MESH:D003924')!.xrefNames, ['T2DM', 'maturity-onset diabetes'], "by an xref that is a KB alt id; 'type 2 diabetes' is a synonym already (case aside)");
  assert.equal(store.get('OMIM:613097')!.xrefNames, undefined, 'a source concept that leads to two KB concepts gives nothing');
  assert.ok(!store.get('MESH:D003920')!.synonyms.includes('sugar diabetes'), 'xref names are not synonyms');
  assert.equal(store.get('DOID:300'), undefined);
  await assert.rejects(loadKb([fixture('ctd-tiny.tsv')], { xrefNameSources: ['/nonexistent/doid.obo'] }), (e: unknown) => e instanceof InputError && e.message === 'cannot read /nonexistent/doid.obo: no such file');
});

test('loadKb: an xref-name source whose id is an alt id of two KB concepts gives names to neither', async () => {
  const seen: string[] = [];
  const store = await loadKb([fixture('ctd-shared-alt.tsv')], { xrefNameSources: [fixture('xref-names-shared-alt.obo')], onFile: (p, f, n) => seen.push(`${f}:${n}`) });
  // DOID:14450 is an AltDiseaseID of both OMIM:400045 and MESH:D023961: it leads to two KB concepts,
  // also when it follows an xref to one of them (MONDO:0010000).
  assert.equal(store.get('OMIM:400045')!.xrefNames, undefined);
  assert.equal(store.get('MESH:D023961')!.xrefNames, undefined);
  assert.deepEqual(store.get('MESH:D052245')!.xrefNames, ['retinitis pigmentosa-deafness syndrome'], 'an alt id of one KB concept still leads to it');
  assert.deepEqual(seen, ['ctd:3', 'obo:1']);
});

test('loadKb: a KB file that yields no concept is an InputError naming it, not an empty part of the KB', async () => {
  const tmp = tempDir();
  try {
    const empty = tmp.file('empty.jsonl', '');
    // A concept JSONL saved under an .obo name: read as OBO it is all header lines.
    const misnamed = tmp.file('kb.obo', '{"id":"X:1","name":"a"}\n');
    for (const path of [empty, misnamed]) {
      await assert.rejects(loadKb([fixture('tiny.jsonl'), path]), (e: unknown) => e instanceof InputError && e.message.startsWith(`${path}: no concepts`));
    }
    // LAT values are upper case: a lower-case --umls-lang keeps no row.
    await assert.rejects(loadKb([fixture('umls/MRCONSO.RRF')], { umls: { languages: ['eng'] } }), (e: unknown) => e instanceof InputError && /MRCONSO\.RRF: no concepts/.test(e.message));
    await assert.rejects(loadKb([fixture('tiny.jsonl')], { supplements: [empty] }), (e: unknown) => e instanceof InputError && e.message.startsWith(`${empty}: no concepts`));
  } finally {
    tmp.cleanup();
  }
});

test('loadKb: MRSTY.RRF and MRREL.RRF passed with an MRCONSO.RRF from another directory are read, not skipped', async () => {
  const tmp = tempDir();
  try {
    const mrconso = tmp.file('MRCONSO.RRF', readFileSync(fixture('umls/MRCONSO.RRF')));
    const store = await loadKb([mrconso, fixture('umls/MRSTY.RRF'), fixture('umls/MRREL.RRF')]);
    assert.deepEqual(store.get('UMLS:C0011849')!.semanticTypes, ['T047']);
    assert.deepEqual(store.get('UMLS:C0011860')!.parents, ['UMLS:C0011849']);
    await assert.rejects(loadKb([mrconso, fixture('umls/MRSTY.RRF'), tmp.file('MRSTY.RRF.gz', gzipSync(readFileSync(fixture('umls/MRSTY.RRF'))))]), (e: unknown) => e instanceof InputError && /MRSTY/.test(e.message));
  } finally {
    tmp.cleanup();
  }
});

test('loadKb: a UMLS filter or OBO synonym option with no file of that format is refused, naming the option, before any file is read', async () => {
  const obo = fixture('tiny.obo');
  const ctd = fixture('ctd-tiny.tsv');
  const read: string[] = [];
  const onFile = (path: string): void => void read.push(path);
  const refused = (message: string) => (e: unknown) => e instanceof InputError && e.code === 'BAD_FLAGS' && e.message === message;
  await assert.rejects(loadKb([obo], { umls: { semanticTypes: ['T047'] }, onFile }), refused(`--umls-tui applies to umls files only, and no KB file is one (${obo}: obo)`));
  await assert.rejects(loadKb([obo, ctd], { umls: { sources: ['MSH'] }, onFile }), refused(`--umls-sab applies to umls files only, and no KB file is one (${obo}: obo, ${ctd}: ctd)`));
  await assert.rejects(loadKb([ctd], { umls: { languages: [] }, onFile }), refused(`--umls-lang applies to umls files only, and no KB file is one (${ctd}: ctd)`));
  await assert.rejects(loadKb([ctd], { umls: { keepSuppressed: true }, onFile }), refused(`--umls-keep-suppressed applies to umls files only, and no KB file is one (${ctd}: ctd)`));
  await assert.rejects(loadKb([ctd], { synonymScopes: ['EXACT'], onFile }), refused(`--all-synonyms applies to obo, obograph files only, and no KB file is one (${ctd}: ctd)`));
  assert.deepEqual(read, []);

  // One file of the format is enough (a supplement counts: it is read with the same options); unset options are no request.
  assert.equal((await loadKb([ctd, fixture('umls/MRCONSO.RRF')], { umls: { sources: ['MSH'] } })).size > 5, true);
  assert.equal((await loadKb([ctd], { supplements: [fixture('tiny-obograph.json')], synonymScopes: ['EXACT'] })).size > 5, true);
  assert.equal((await loadKb([ctd], { umls: { keepSuppressed: false }, synonymScopes: undefined })).size, 5);
});
