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

/** A lone half of a surrogate pair: what a window cut by UTF-16 index could leave behind. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

test('a window edge inside a surrogate pair never leaves half of it', () => {
  const spec: QuerySpec = { mode: 'context', markers: ['[M]', '[/M]'], contextChars: 10 };
  const emoji = '\u{1F600}'; // two UTF-16 code units
  for (let pad = 0; pad < 4; pad++) {
    // Left edge: the window starts between the emoji's two halves (mention.start − 10 = its low half).
    const left = `x ${emoji}${'a'.repeat(pad)} ${'b'.repeat(7 - pad)} fever`;
    const lstart = left.indexOf('fever');
    assert.ok(left.charCodeAt(lstart - 10) >= 0xdc00 && left.charCodeAt(lstart - 10) <= 0xdfff, 'the cut falls inside the pair');
    const lq = buildQuery(left, { start: lstart, end: lstart + 5, text: 'fever' }, spec);
    assert.doesNotMatch(lq, LONE_SURROGATE, JSON.stringify(lq));
    assert.match(lq, /\[M\] fever \[\/M\]$/);
    // Right edge: the window ends between the halves.
    const right = `fever ${'b'.repeat(7 - pad)} ${'a'.repeat(pad)}${emoji} x`;
    assert.ok(right.charCodeAt(15) >= 0xdc00 && right.charCodeAt(15) <= 0xdfff, 'the cut falls inside the pair');
    const rq = buildQuery(right, { start: 0, end: 5, text: 'fever' }, spec);
    assert.doesNotMatch(rq, LONE_SURROGATE, JSON.stringify(rq));
    assert.match(rq, /^\[M\] fever \[\/M\]/);
  }
  // A whole emoji inside the window is kept as it is.
  const whole = `${emoji} fever`;
  assert.equal(buildQuery(whole, { start: 3, end: 8, text: 'fever' }, spec), `${emoji} [M] fever [/M]`);
});

test('an empty window: the mention is the whole note, or the context is blank', () => {
  const spec: QuerySpec = { mode: 'context', markers: ['[M]', '[/M]'], contextChars: 100 };
  assert.equal(buildQuery('fever', { start: 0, end: 5, text: 'fever' }, spec), '[M] fever [/M]');
  assert.equal(buildQuery('   fever \n\t', { start: 3, end: 8, text: 'fever' }, spec), '[M] fever [/M]');
});
