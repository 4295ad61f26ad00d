import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildQuery, type QuerySpec } from '../../../src/text/context-window.ts';

const text = 'The patient with hereditary breast cancer was referred for genetic counselling today.';
const start = text.indexOf('breast cancer');
const mention = { start, end: start + 'breast cancer'.length, text: 'breast cancer' };

test('mention mode is the mention alone, or its override', () => {
  const spec: QuerySpec = { mode: 'mention', markers: ['[M]', '[/M]'], contextChars: 20 };
  assert.equal(buildQuery(text, mention, spec), 'breast cancer');
  assert.equal(buildQuery(text, mention, spec, 'carcinoma of the breast'), 'carcinoma of the breast');
});

test('context mode marks the mention and keeps whole words on each side', () => {
  const spec: QuerySpec = { mode: 'context', markers: ['[M]', '[/M]'], contextChars: 20 };
  // 20 characters to the left start inside "patient": the partial word is dropped.
  assert.equal(buildQuery(text, mention, spec), 'with hereditary [M] breast cancer [/M] was referred for');
  assert.equal(buildQuery(text, { ...mention }, { ...spec, contextChars: 0 }), '[M] breast cancer [/M]');
});

test('context at the note edges', () => {
  const spec: QuerySpec = { mode: 'context', markers: ['<m>', '</m>'], contextChars: 500 };
  assert.equal(buildQuery('fever', { start: 0, end: 5, text: 'fever' }, spec), '<m> fever </m>');
});
