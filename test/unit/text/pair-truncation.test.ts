import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { WordPieceTokenizer } from '../../../src/text/tokenizer.ts';

// The default cross-encoder was trained on pairs cut by Hugging Face's truncation="longest_first"
// (models/cuilink_models/train_crossencoder.py), and the Python evaluator cuts them so too: the
// linker must feed it the same tokens. The ids were written once by the Python tokenizer:
//   models/.venv/bin/python test/fixtures/text/hf-pair-truncation.py
const fixture = JSON.parse(readFileSync('test/fixtures/text/hf-pair-truncation.json', 'utf8')) as {
  tokenizer: string;
  cases: { a: string; b: string; maxLength: number; ids: number[]; typeIds: number[] }[];
};
const tokenizer = WordPieceTokenizer.load(fixture.tokenizer);
const marker = tokenizer.tokenId('[M]')!;

test('pairs are cut token for token as longest_first cuts them', () => {
  for (const { a, b, maxLength, ids, typeIds } of fixture.cases) {
    const pair = tokenizer.encodePair(a, b, maxLength);
    assert.deepEqual(pair.ids, ids, `${maxLength}: ${a.slice(0, 40)} | ${b.slice(0, 40)}`);
    assert.deepEqual(pair.typeIds, typeIds, `segments, ${maxLength}: ${a.slice(0, 40)}`);
  }
});

test('a mention marked at the head of the query (the default reranker) is cut as in training too', () => {
  for (const { a, b, maxLength, ids } of fixture.cases) {
    assert.deepEqual(tokenizer.encodePair(a, b, maxLength, marker).ids, ids, `${maxLength}: ${a.slice(0, 40)}`);
  }
});

test('a marked mention inside a long context keeps its markers when the pair is cut', () => {
  const query = `${'left '.repeat(40)}[M] fever [/M]${' right'.repeat(40)}`;
  const pair = tokenizer.encodePair(query, `${'name '.repeat(30)}; Disease`, 48, marker);
  assert.equal(pair.ids.length, 48);
  const first = pair.ids.slice(0, pair.ids.indexOf(102));
  assert.ok(first.includes(marker) && first.includes(tokenizer.tokenId('[/M]')!), 'both markers in the query segment');
});
