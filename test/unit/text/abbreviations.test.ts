import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadPubTatorCorpus } from '../../../src/eval/gold.ts';
import { findAbbreviationDefinitions, initialsSpell } from '../../../src/text/abbreviations.ts';

test('finds long form (SF) definitions with their offsets', () => {
  const text = 'Patients with chronic obstructive pulmonary disease (COPD) were enrolled. COPD worsened.';
  const [d] = findAbbreviationDefinitions(text);
  assert.ok(d);
  assert.equal(d.shortForm, 'COPD');
  assert.equal(d.longForm, 'chronic obstructive pulmonary disease');
  assert.equal(text.slice(d.longFormStart, d.longFormEnd), d.longForm);
  assert.equal(text.slice(d.shortFormStart, d.shortFormStart + 4), 'COPD');
});

test('characters need not start every word (Schwartz-Hearst matching)', () => {
  const [d] = findAbbreviationDefinitions('We studied adrenoleukodystrophy (ALD) in boys.');
  assert.equal(d?.longForm, 'adrenoleukodystrophy');
  const [e] = findAbbreviationDefinitions('Hereditary nonpolyposis colorectal cancer (HNPCC; Lynch syndrome) is common.');
  assert.equal(e?.shortForm, 'HNPCC');
  assert.equal(e?.longForm, 'Hereditary nonpolyposis colorectal cancer');
});

test('parentheses that are not definitions are ignored', () => {
  assert.deepEqual(findAbbreviationDefinitions('The dose was raised (see table 2) and (p < 0.05).'), []);
  assert.deepEqual(findAbbreviationDefinitions('Blood pressure (BX) was normal.'), []);
  assert.deepEqual(findAbbreviationDefinitions('no parentheses at all'), []);
});

test('initialsSpell: a long form whose word initials spell the short form, not one cut short', () => {
  assert.equal(initialsSpell('AFAP', 'attenuated familial adenomatous polyposis'), true);
  assert.equal(initialsSpell('DM', 'diabetes mellitus'), true);
  assert.equal(initialsSpell('A-T', 'ataxia-telangiectasia'), true);
  assert.equal(initialsSpell('HNPCC', 'hereditary non-polyposis colorectal cancer'), true);
  // Schwartz–Hearst's shortest long form for AAPC: the second A sits inside "adenomatous".
  assert.equal(initialsSpell('AAPC', 'adenomatous polyposis coli'), false);
  assert.equal(initialsSpell('DMD', 'diabetes mellitus'), false);
  assert.equal(initialsSpell('D', 'disease'), false);
});

test('a newline or a tab ends the long form as a space does (a clinical note\'s fields)', () => {
  for (const [text, longForm] of [
    ['History:\nchronic kidney disease (CKD) noted.', 'chronic kidney disease'],
    ['Seen today\tDiabetes mellitus (DM) stable.', 'Diabetes mellitus'],
    ['Plan:\r\nheart failure (HF) follow-up.', 'heart failure'],
  ] as const) {
    const [d] = findAbbreviationDefinitions(text);
    assert.ok(d, JSON.stringify(text));
    assert.equal(d.longForm, longForm);
    assert.equal(text.slice(d.longFormStart, d.longFormEnd), longForm);
  }
});

test('offsets stay in the original text when lower-casing would lengthen it (dotted capital İ)', () => {
  for (const [text, longForm] of [
    ['İzmir cohort: chronic kidney disease (CKD) was', 'chronic kidney disease'],
    ['İİ chronic kidney disease (CKD)', 'chronic kidney disease'],
    ['Seen: İdiopathic pulmonary fibrosis (IPF) in İstanbul', 'İdiopathic pulmonary fibrosis'],
  ] as const) {
    const [d] = findAbbreviationDefinitions(text);
    assert.ok(d, JSON.stringify(text));
    assert.equal(d.longForm, longForm);
    assert.equal(text.slice(d.longFormStart, d.longFormEnd), longForm);
    assert.equal(text.slice(d.shortFormStart, d.shortFormStart + d.shortForm.length), d.shortForm);
  }
});

test('initialsSpell: any dash or a slash separates words; case and diacritics are ignored', () => {
  assert.equal(initialsSpell('EDS', 'Ehlers–Danlos syndrome'), true, 'en dash');
  assert.equal(initialsSpell('EDS', 'Ehlers-Danlos syndrome'), true, 'hyphen-minus');
  assert.equal(initialsSpell('EDS', 'Ehlers‐Danlos syndrome'), true, 'U+2010 hyphen');
  assert.equal(initialsSpell('LNS', 'Lesch—Nyhan syndrome'), true, 'em dash');
  assert.equal(initialsSpell('HP', 'hypertension/proteinuria'), true);
  assert.equal(initialsSpell('SS', 'Sjögren syndrome'), true);
  assert.equal(initialsSpell('ÉS', 'essential syndrome'), true);
  assert.equal(initialsSpell('IBD', 'İnflammatory bowel disease'), true);
  assert.equal(initialsSpell('ED', 'Ehlers–Danlos syndrome'), false);
});

test('a parenthetical glued to the next word belongs to the long form; a glued full stop ends the sentence', () => {
  const found = (text: string) => findAbbreviationDefinitions(text, { initials: true }).map((d) => [d.shortForm, d.longForm]);
  assert.deepEqual(found('Anti-neutrophil cytoplasmic antibody (ANCA)-associated vasculitis (AAV) is rare.'), [
    ['ANCA', 'Anti-neutrophil cytoplasmic antibody'],
    ['AAV', '(ANCA)-associated vasculitis'],
  ]);
  assert.deepEqual(found('Tumor necrosis factor (TNF)-related apoptosis-inducing ligand (TRAIL) was given.')[1], ['TRAIL', '(TNF)-related apoptosis-inducing ligand']);
  assert.deepEqual(found('Diabetes mellitus (DM).Renal failure (RF) follows.'), [
    ['DM', 'Diabetes mellitus'],
    ['RF', 'Renal failure'],
  ]);
  // A parenthesis closed before a space, or one still open, still bounds the long form.
  assert.deepEqual(found('In (rare cases) chronic kidney disease (CKD) was seen (as in chronic kidney disease (CKD2)'), [
    ['CKD', 'chronic kidney disease'],
    ['CKD2', 'chronic kidney disease'],
  ]);
  assert.deepEqual(found('Seen in (chronic kidney disease (CKD)'), [['CKD', 'chronic kidney disease']]);
});

// A digest of each definition's short form and offsets, over both `initials` settings, in order.
// The code of commit 76e7cde (a scan of all the text before every parenthesis: quadratic in note
// length, bench/abbreviation-scaling.ts) found the same definitions on the notes below, and 2,296
// more whose long forms ran over MAX_LONG_FORM_UNITS (256) units; nothing else differed.
function digest(texts: readonly string[]): { definitions: number; sha256: string } {
  const hash = createHash('sha256');
  let definitions = 0;
  for (const text of texts) {
    for (const initials of [false, true]) {
      for (const d of findAbbreviationDefinitions(text, { initials })) {
        // The long form is the text between its offsets, so the offsets are the whole definition.
        assert.equal(d.longForm, text.slice(d.longFormStart, d.longFormEnd));
        hash.update(`${d.shortForm}|${d.shortFormStart}|${d.longFormStart}|${d.longFormEnd}\n`);
        definitions++;
      }
    }
    hash.update('\u0000');
  }
  return { definitions, sha256: hash.digest('hex') };
}

/** Seeded texts that reach every path: short ones of mixed characters and words, long words with glued parentheses. */
function syntheticNotes(): string[] {
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const units = ['a', 'b', 'c', 'A', 'B', 'C', 'D', 'x', '1', ' ', ' ', ' ', '\n', '\t', '(', '(', ')', ')', '.', '-', ';', ',', 'İ', 'ı', 'K', '𝐀', '/', 'é', 'É', 'Σ'];
  const words = ['chronic', 'kidney', 'disease', '(CKD)', '(AB)', 'Alpha', 'beta', 'AB', 'a.', 'b).', '(x', 'y)', '(ANCA)-associated', 'Diabetes', 'mellitus', '(DM)', '(DM).Renal', 'İzmir', '(İA)', 'i̇a', '(ab; cd)', '(a, b)', 'x(AB)y', 'ab(AB)-c', '((', '))'];
  const glued = ['ab', 'Cd', 'x', 'K', 'İ', '𝐀', '-', ';', ',', '1', 'é', '(AB)y', '(CD)-', '(ab c)d', '(İA)x', '(NDP)z', 'y)a', '(A1)b', 'chronic', 'kidney', 'disease', 'Norrie', 'nd', 'p', '(ALD)q', 'X-linked'];
  const notes: string[] = [];
  for (let i = 0; i < 3000; i++) {
    let t = '';
    const n = 1 + Math.floor(random() * 120);
    const byUnit = random() < 0.5;
    for (let k = 0; k < n; k++) t += byUnit ? pick(units) : pick(words) + (random() < 0.7 ? ' ' : '');
    notes.push(t);
  }
  for (let i = 0; i < 300; i++) {
    let t = '';
    const n = 50 + Math.floor(random() * 600);
    for (let k = 0; k < n; k++) t += pick(glued) + (random() < 0.03 ? pick([' ', '\n', '. ', ') ', ' (']) : '');
    notes.push(t);
  }
  notes.push('chronic kidney disease (CKD)-associated '.repeat(500), 'ab(AB)c'.repeat(900), `${'x'.repeat(5000)} Norrie disease (NDP)`);
  return notes;
}

test('definitions on long and odd notes are those of the quadratic code, but for long forms over 256 units', () => {
  const notes = syntheticNotes();
  assert.deepEqual(digest(notes), { definitions: 48820, sha256: '1985440b5b86a739ecd9bf1a7dc23db02b1d8cae155e634a433f86cd8ec28053' });
  for (const text of notes) for (const d of findAbbreviationDefinitions(text, { initials: true })) assert.ok(d.longFormEnd - d.longFormStart <= 256, d.longForm.slice(0, 80));
});

test('definitions on every NCBI-disease train and dev note are those of the quadratic code of commit 76e7cde', { skip: !existsShared() }, async () => {
  const texts: string[] = [];
  for (const file of ['NCBItrainset_corpus.txt', 'NCBIdevelopset_corpus.txt']) {
    texts.push(...(await loadPubTatorCorpus(fileURLToPath(new URL(`../../../../shared/data/ncbi-disease/${file}`, import.meta.url)))).notes.map((n) => n.text));
  }
  assert.equal(texts.length, 692);
  assert.deepEqual(digest(texts), { definitions: 1648, sha256: 'f6e6d3f92a0fe452164878e9d2259a0d5793422ab28a3d99afcf10b9beb7fe07' });
});

function existsShared(): boolean {
  return existsSync(new URL('../../../../shared/data/ncbi-disease/PROVENANCE.md', import.meta.url));
}
