import { test } from 'node:test';
import assert from 'node:assert/strict';
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
