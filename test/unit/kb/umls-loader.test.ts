import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { ParseError } from '../../../src/kb/errors.ts';
import { readUmls } from '../../../src/kb/umls-loader.ts';
import { conceptFromJsonLine, conceptToJsonLine } from '../../../src/kb/jsonl-format.ts';
import { fixture, tempDir } from './fixtures.ts';

const MRCONSO = fixture('umls/MRCONSO.RRF');

test('UMLS: preferred name (TS=P, STT=PF, ISPREF=Y), default filters (ENG, not suppressed)', async () => {
  const concepts = await readUmls(MRCONSO);
  const byId = new Map(concepts.map((c) => [c.id, c]));
  assert.deepEqual([...byId.keys()], ['UMLS:C0011849', 'UMLS:C0011860', 'UMLS:C0011854', 'UMLS:C0020538', 'UMLS:C0012634', 'UMLS:C0015967']);
  const dm = byId.get('UMLS:C0011849')!;
  assert.equal(dm.name, 'Diabetes Mellitus', 'the TS=P/STT=PF/ISPREF=Y row wins over the first-seen one');
  assert.deepEqual(dm.synonyms, ['Diabetes', 'diabetes mellitus'], 'German and suppressed names dropped; case variants kept');
  assert.deepEqual(dm.semanticTypes, ['T047']);
  assert.deepEqual(dm.xrefs, ['MESH:D003920']);
  const t2 = byId.get('UMLS:C0011860')!;
  assert.deepEqual(t2.synonyms, ['Type 2 diabetes mellitus', 'NIDDM'], 'duplicate rows merge');
  assert.equal(byId.get('UMLS:C0011854')!.name, 'Type 1 diabetes mellitus');
  assert.deepEqual(byId.get('UMLS:C0015967')!.xrefs, ['MESH:D005334'], 'OMIM allelic variant codes are not xrefs');
});

test('UMLS: MRREL PAR/RB make CUI2 the parent of CUI1; CHD, RO, suppressed and self rows ignored', async () => {
  const byId = new Map((await readUmls(MRCONSO)).map((c) => [c.id, c]));
  assert.deepEqual(byId.get('UMLS:C0011860')!.parents, ['UMLS:C0011849']);
  assert.deepEqual(byId.get('UMLS:C0011849')!.parents, ['UMLS:C0012634']);
  assert.deepEqual(byId.get('UMLS:C0020538')!.parents, ['UMLS:C0012634']);
  assert.deepEqual(byId.get('UMLS:C0011854')!.parents, []);
  assert.deepEqual(byId.get('UMLS:C0015967')!.parents, []);
  assert.deepEqual(byId.get('UMLS:C0012634')!.parents, []);
});

test('UMLS: SAB, language, TUI and suppression filters', async () => {
  const msh = await readUmls(MRCONSO, { sources: ['MSH'] });
  assert.ok(!msh.some((c) => c.id === 'UMLS:C0011854'), 'a concept with no MSH name is gone');
  const t2 = msh.find((c) => c.id === 'UMLS:C0011860')!;
  assert.deepEqual(t2.synonyms, ['NIDDM']);
  assert.deepEqual(msh.find((c) => c.id === 'UMLS:C0020538')!.parents, [], 'the SNOMEDCT_US relation is filtered out too');

  const german = await readUmls(MRCONSO, { languages: ['GER'] });
  assert.deepEqual(german.map((c) => [c.id, c.name]), [['UMLS:C0011849', 'Zuckerkrankheit']]);
  const every = await readUmls(MRCONSO, { languages: [] });
  assert.ok(every.find((c) => c.id === 'UMLS:C0011849')!.synonyms.includes('Zuckerkrankheit'));

  const symptoms = await readUmls(MRCONSO, { semanticTypes: ['T184'] });
  assert.deepEqual(symptoms.map((c) => c.id), ['UMLS:C0015967']);

  const suppressed = await readUmls(MRCONSO, { keepSuppressed: true });
  assert.ok(suppressed.find((c) => c.id === 'UMLS:C0011849')!.synonyms.includes('DM obsolete name'));
  assert.deepEqual(suppressed.find((c) => c.id === 'UMLS:C0011854')!.parents, ['UMLS:C0011849']);
});

test('UMLS: gzipped tables next to each other, and a short row is a ParseError', async () => {
  const tmp = tempDir();
  try {
    for (const table of ['MRCONSO', 'MRSTY', 'MRREL']) {
      tmp.file(`${table}.RRF.gz`, gzipSync(readFileSync(fixture(`umls/${table}.RRF`))));
    }
    const fromGz = await readUmls(`${tmp.dir}/MRCONSO.RRF.gz`);
    assert.deepEqual(fromGz, await readUmls(MRCONSO));
    const bad = tmp.file('MRCONSO.RRF', `${readFileSync(MRCONSO, 'utf8')}C0000001|ENG|P|short row|\n`);
    await assert.rejects(readUmls(bad, { mrsty: false, mrrel: false }), (e: unknown) => e instanceof ParseError && e.line === 16 && e.file === bad);
  } finally {
    tmp.cleanup();
  }
});

test('UMLS: cross-references as the target vocabularies write them: HPO codes prefixed once, ICD-10-CM subcategories kept', async () => {
  const tmp = tempDir();
  try {
    const rows = [
      'C0015967|ENG|P|L0000014|PF|S0000014|Y|A0000014||||MSH|MH|D005334|Fever|0|N||',
      'C0015967|ENG|S|L0000016|PF|S0000016|Y|A0000016||||HPO|PT|HP:0001945|Fever|0|N||',
      'C0015967|ENG|S|L0000015|PF|S0000015|N|A0000015||||OMIM|PT|601665.0001|Fever allele|0|N||',
      'C0011860|ENG|P|L0000006|PF|S0000006|Y|A0000006||||MSH|MH|D003924|Diabetes Mellitus, Type 2|0|N||',
      'C0011860|ENG|S|L0000017|PF|S0000017|Y|A0000017||||ICD10CM|PT|E11.9|Diabetes Mellitus, Type 2|0|N||',
      'C0011860|ENG|S|L0000018|PF|S0000018|Y|A0000018||||ICD10CM|HT|E11|Diabetes Mellitus, Type 2|0|N||',
    ];
    const concepts = await readUmls(tmp.file('MRCONSO.RRF', `${rows.join('\n')}\n`));
    const byId = new Map(concepts.map((c) => [c.id, c]));
    assert.deepEqual(byId.get('UMLS:C0015967')!.xrefs, ['MESH:D005334', 'HP:0001945'], 'OMIM allelic variants are still left out');
    assert.deepEqual(byId.get('UMLS:C0011860')!.xrefs, ['MESH:D003924', 'ICD10CM:E11.9', 'ICD10CM:E11']);
  } finally {
    tmp.cleanup();
  }
});

test('UMLS: a blank STR is skipped like an empty one, so the index written from it reloads (JSONL refuses a blank name)', async () => {
  const tmp = tempDir();
  try {
    // A CUI whose only English string is blanks, and a blank synonym beside a real name.
    const rows = ['C9000001|ENG|P|L9000001|PF|S9000001|Y|A9000001||||MSH|MH|D900001| \u00a0\t|0|N||', 'C0011849|ENG|S|L9000002|PF|S9000002|Y|A9000002||||MSH|ET|D003920|   |0|N||'];
    const file = tmp.file('MRCONSO.RRF', `${readFileSync(MRCONSO, 'utf8')}${rows.join('\n')}\n`);
    const concepts = await readUmls(file, { mrsty: false, mrrel: false });
    assert.equal(concepts.find((c) => c.id === 'UMLS:C9000001'), undefined, 'no concept from blanks');
    for (const c of concepts) {
      const back = conceptFromJsonLine(conceptToJsonLine(c));
      assert.equal(typeof back, 'object', `${c.id} reloads: ${String(back)}`);
      assert.ok([c.name, ...c.synonyms].every((n) => n.trim().length > 0), `${c.id} has no blank name`);
    }
  } finally {
    tmp.cleanup();
  }
});
