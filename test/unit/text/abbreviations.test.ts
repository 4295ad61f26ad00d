import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findAbbreviationDefinitions } from '../../../src/text/abbreviations.ts';

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
