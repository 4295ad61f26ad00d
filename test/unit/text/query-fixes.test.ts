import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findAbbreviationDefinitions, isLongFormOf } from '../../../src/text/abbreviations.ts';
import { expandMention, longFormsAmongMentions } from '../../../src/text/abbreviation-expansion.ts';
import { compositeReadings } from '../../../src/text/composite-mentions.ts';
import { hereditaryReading, looseKey, unqualifiedKey } from '../../../src/text/loose-key.ts';

test('loose key: word order, plurals, British spelling, roman numerals, Greek letters, stop words', () => {
  assert.equal(looseKey('Anemia, Hemolytic, Congenital'), looseKey('congenital hemolytic anaemia'));
  assert.equal(looseKey('deficiency of C3'), looseKey('C3 deficiency'));
  assert.equal(looseKey('von Willebrand disease, Type II'), looseKey('type 2 von Willebrand disease'));
  assert.equal(looseKey('haematuria'), looseKey('Hematuria'));
  // A lone-letter numeral reads alike in either word order, and only after a word that numbers.
  assert.equal(looseKey('Ichthyosis, X-Linked'), looseKey('X-linked ichthyosis'));
  assert.equal(looseKey('Disease, I-cell'), looseKey('I-cell disease'));
  assert.equal(looseKey('Factor V Deficiency'), looseKey('factor 5 deficiency'));
  assert.equal(looseKey('Drug abuse, IV'), looseKey('IV drug abuse'));
  assert.equal(looseKey('colorectal tumours'), looseKey('Colorectal Tumor'));
  assert.equal(looseKey('α-thalassemia'), looseKey('alpha thalassemia'));
  assert.equal(looseKey('non-syndromic deafness'), looseKey('nonsyndromic deafness'));
  assert.equal(looseKey('inherited disorders'), looseKey('Hereditary Disease'));
  assert.equal(looseKey('inherited ataxia'), looseKey('Ataxia, Hereditary'));
  assert.notEqual(looseKey('inherited disorder'), looseKey('acquired disorder'));
  assert.notEqual(looseKey('breast cancer'), looseKey('ovarian cancer'));
  assert.equal(unqualifiedKey('Hereditary Breast and Ovarian Cancer Syndrome'), unqualifiedKey('breast-ovarian cancer'));
  assert.equal(unqualifiedKey('familial breast/ovarian cancers'), 'breast cancer ovarian');
  assert.notEqual(unqualifiedKey('Hereditary Breast Cancer'), unqualifiedKey('breast-ovarian cancer'));
  // Latin endings are not plurals.
  assert.equal(looseKey('arthritis'), 'arthritis');
});

test('a mode of inheritance reads as "hereditary"; X-linked and plain words do not', () => {
  assert.equal(hereditaryReading('autosomal recessive disorder'), 'hereditary disorder');
  assert.equal(looseKey(hereditaryReading('Autosomal-dominant disorders')!), looseKey('Hereditary Diseases'));
  assert.equal(hereditaryReading('recessively inherited disorder'), 'hereditary disorder');
  assert.equal(hereditaryReading('dominant myotonia congenita'), 'hereditary myotonia congenita');
  assert.equal(hereditaryReading('X-linked recessive ataxia'), 'X-linked hereditary ataxia');
  assert.equal(hereditaryReading('X-linked ataxia'), undefined);
  assert.equal(hereditaryReading('hereditary deafness'), undefined);
  assert.equal(hereditaryReading('predominantly motor neuropathy'), undefined, 'whole words only');
});

test('composite readings distribute the shared head; a comma alone is no coordination', () => {
  assert.deepEqual(compositeReadings('breast and ovarian cancer').slice(0, 1), ['breast cancer']);
  assert.ok(compositeReadings('breast and ovarian cancer').includes('ovarian cancer'));
  assert.ok(compositeReadings('Duchenne/Becker muscular dystrophy').includes('Duchenne muscular dystrophy'));
  assert.ok(compositeReadings('X- and Y-linked disease').includes('X-linked disease'));
  assert.ok(compositeReadings('facial, limb and genital abnormalities').includes('limb abnormalities'));
  assert.deepEqual(compositeReadings('bacterial, especially neisserial, infections'), []);
  assert.deepEqual(compositeReadings('colorectal cancer'), []);
});

test('short forms whose letters are out of long-form order are found by word initials, when asked', () => {
  const text = 'We mapped the gene for Norrie disease (NDP) on Xp11.';
  assert.deepEqual(findAbbreviationDefinitions(text), []);
  const [d] = findAbbreviationDefinitions(text, { initials: true });
  assert.equal(d?.longForm, 'Norrie disease');
  assert.deepEqual(findAbbreviationDefinitions('Blood pressure (BX) was normal.', { initials: true }), []);
});

test('short forms inside a mention and inside long forms are written out; the definition itself is not', () => {
  const text = 'Inactivation of the adenomatous polyposis coli (APC) gene. Patients with familial APC (FAP) and FAP.';
  const defs = new Map(findAbbreviationDefinitions(text).map((d) => [d.shortForm, { longForm: d.longForm, start: d.longFormStart, end: d.longFormEnd }]));
  const at = (s: string, from = 0) => ({ text: s, start: text.indexOf(s, from), end: text.indexOf(s, from) + s.length });
  const last = text.lastIndexOf('FAP');
  assert.deepEqual(expandMention({ text: 'FAP', start: last, end: last + 3 }, defs, new Map(), true), { text: 'familial adenomatous polyposis coli', partial: false });
  // "familial APC" is the definition of FAP, but APC inside it is a use of APC.
  assert.deepEqual(expandMention(at('familial APC'), defs, new Map(), true), { text: 'familial adenomatous polyposis coli', partial: true });
  assert.equal(expandMention(at('familial APC'), defs, new Map(), false), undefined);
  assert.equal(expandMention(at('adenomatous polyposis coli'), defs, new Map(), true), undefined);
});

test('nested definitions cannot blow a mention up: one written out past MAX_EXPANDED_UNITS is linked as written', () => {
  // Each long form is made of the next definition's short forms, so every level multiplies the
  // mention: unbounded, a 700-character note wrote this 506-character mention out to 161,000
  // characters, and three more levels to more than a string can hold (RangeError: the stage stopped).
  const repeat = (s: string, n: number) => Array.from({ length: n }, () => s).join(' ');
  const mention = repeat('ABBBBBBBBB', 46);
  const text = `A ${repeat('BBBBBBBBBB', 14)} (ABBBBBBBBB). B${'b'.repeat(9)}${'z'.repeat(240)} (BBBBBBBBBB). Then ${mention}.`;
  const defs = new Map(findAbbreviationDefinitions(text, { initials: true }).map((d) => [d.shortForm, { longForm: d.longForm, start: d.longFormStart, end: d.longFormEnd }]));
  assert.deepEqual([...defs.keys()], ['ABBBBBBBBB', 'BBBBBBBBBB']);
  const start = text.lastIndexOf(mention);
  assert.equal(expandMention({ text: mention, start, end: start + mention.length }, defs, new Map(), true), undefined);
  // A short form written out within the bound still is.
  const short = text.lastIndexOf('BBBBBBBBBB');
  assert.equal(expandMention({ text: 'BBBBBBBBBB', start: short, end: short + 10 }, defs, new Map(), true)?.text.length, 250);
});

test('an undefined short form takes its long form from the note’s other mentions', () => {
  assert.ok(isLongFormOf('PDS', 'Pendred syndrome'));
  assert.ok(!isLongFormOf('PDS', 'hearing loss'));
  const forms = longFormsAmongMentions([{ text: 'PDS' }, { text: 'hearing loss' }, { text: 'Pendred syndrome' }], isLongFormOf);
  assert.equal(forms.get('PDS'), 'Pendred syndrome');
  assert.deepEqual(expandMention({ text: 'PDS', start: 0, end: 3 }, new Map(), forms, true), { text: 'Pendred syndrome', partial: false });
});

test('two different long forms among the mentions leave the short form as written, whatever the mentions\' order', () => {
  const hbp = { text: 'HBP', start: 7 };
  const high = { text: 'high blood pressure', start: 12 };
  const hepatic = { text: 'hepatic blood perfusion', start: 37 };
  assert.ok(isLongFormOf('HBP', high.text) && isLongFormOf('HBP', hepatic.text));
  assert.equal(longFormsAmongMentions([hbp, high, hepatic], isLongFormOf).get('HBP'), undefined);
  assert.equal(longFormsAmongMentions([hbp, hepatic, high], isLongFormOf).get('HBP'), undefined);
  // The same long form written twice, in any case, is one long form: the first in the text is taken.
  const again = { text: 'High blood pressure', start: 60 };
  assert.equal(longFormsAmongMentions([again, hbp, high], isLongFormOf).get('HBP'), 'high blood pressure');
  assert.equal(longFormsAmongMentions([hbp, high, again], isLongFormOf).get('HBP'), 'high blood pressure');
});
