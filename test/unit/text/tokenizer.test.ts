import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { WordPieceTokenizer } from '../../../src/text/tokenizer.ts';

const tokenizer = WordPieceTokenizer.load('models/default/biencoder/tokenizer.json');

test('single sequences get [CLS] … [SEP] and are cut to maxLength', () => {
  const short = tokenizer.encode('breast cancer', 32);
  assert.equal(short.ids.length, 4);
  assert.equal(short.ids[0], 101);
  assert.equal(short.ids.at(-1), 102);
  const long = tokenizer.encode('word '.repeat(100), 16);
  assert.equal(long.ids.length, 16);
  assert.equal(long.ids.at(-1), 102);
});

test('markers are single tokens and a long context keeps the window around them', () => {
  const marker = tokenizer.tokenId('[M]');
  assert.ok(marker !== undefined);
  const text = `${'left '.repeat(60)}[M] fever [/M]${' right'.repeat(60)}`;
  const seq = tokenizer.encode(text, 24, marker);
  assert.equal(seq.ids.length, 24);
  assert.ok(seq.ids.includes(marker), 'the opening marker survives truncation');
  assert.ok(seq.ids.includes(tokenizer.tokenId('[/M]')!), 'the closing marker survives truncation');
});

test('pairs carry segment ids and are cut longest-first', () => {
  const pair = tokenizer.encodePair('breast cancer', 'malignant neoplasm of breast', 64);
  const sep = pair.ids.indexOf(102);
  assert.equal(pair.typeIds.slice(0, sep + 1).every((t) => t === 0), true);
  assert.equal(pair.typeIds.slice(sep + 1).every((t) => t === 1), true);
  const cut = tokenizer.encodePair('a '.repeat(50), 'short name', 20);
  assert.equal(cut.ids.length, 20);
  assert.ok(cut.typeIds.filter((t) => t === 1).length >= 3, 'the short side is kept');
});

test('a missing tokenizer is a clear error', () => {
  assert.throws(() => WordPieceTokenizer.load('no/such/tokenizer.json'), /cannot read tokenizer/);
});

test('ids match the Python (Rust) tokenizer the models were trained with: final sigma, CJK outside the BMP', () => {
  const fixture = JSON.parse(readFileSync('test/fixtures/text/tokenizer-python-ids.json', 'utf8')) as { cases: { text: string; ids: number[] }[] };
  for (const { text, ids } of fixture.cases) assert.deepEqual(tokenizer.pieces(text), ids, JSON.stringify(text));
});
