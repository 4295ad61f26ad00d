import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CrossEncoder } from '../../../src/encode/cross-encoder.ts';

// The shipped rerankers against the torch logits recorded when each was exported
// (models/tests/fixtures/reference_crossencoder*.json): tokenization of the pair, the [M] markers,
// token types and the ONNX graph all have to agree for these numbers to match. The default, and
// the opt-in distilled one (3 of its 6 layers, models/default/MODEL_CARD.md).
const SHIPPED = [
  { dir: 'models/default/crossencoder', fixture: 'models/tests/fixtures/reference_crossencoder.json' },
  { dir: 'models/default/crossencoder-fast', fixture: 'models/tests/fixtures/reference_crossencoder_fast.json' },
];

for (const { dir, fixture } of SHIPPED) {
  describe(dir, () => {
    const reference = JSON.parse(readFileSync(fixture, 'utf8')) as {
      modelId: string;
      pairs: [string, string][];
      input_ids: number[][];
      token_type_ids: number[][];
      logits: number[];
    };
    const pairs = reference.pairs.map(([query, candidate]) => ({ query, candidate }));
    let int8: CrossEncoder;

    before(async () => {
      int8 = await CrossEncoder.open(dir, { provider: 'cpu', threads: 1, log: () => {} });
    });
    after(() => int8.close());

    test('the fixture was recorded for this model', () => {
      assert.equal(int8.modelId, reference.modelId, 'stale fixture: re-export with --fixture');
    });

    test('fp16 logits equal the torch logits recorded at export', async () => {
      const fp16 = await CrossEncoder.open(dir, { provider: 'cpu', precision: 'fp16', threads: 1, log: () => {} });
      try {
        const got = await fp16.score(pairs);
        got.forEach((logit, i) => assert.ok(Math.abs(logit - reference.logits[i]!) < 0.02, `pair ${i}: ${logit} vs torch ${reference.logits[i]}`));
      } finally {
        await fp16.close();
      }
    });

    test('int8 keeps the order torch gives the candidates of one mention', async () => {
      assert.equal(int8.precision, 'int8');
      const got = await int8.score(pairs);
      got.forEach((logit, i) => assert.ok(Math.abs(logit - reference.logits[i]!) < 0.5, `pair ${i}: ${logit} vs torch ${reference.logits[i]}`));
      const byQuery = new Map<string, number[]>();
      reference.pairs.forEach(([q], i) => byQuery.set(q, [...(byQuery.get(q) ?? []), i]));
      for (const [query, rows] of byQuery) {
        if (rows.length < 2) continue;
        const best = (scores: ArrayLike<number>) => rows.reduce((a, b) => (scores[b]! > scores[a]! ? b : a));
        assert.equal(best(got), best(reference.logits), `best candidate for ${query}`);
      }
    });

    test('tokenizePair gives the token and segment ids torch was fed at export (distillation data)', () => {
      reference.pairs.forEach(([query, candidate], i) => {
        const { ids, typeIds } = int8.tokenizePair(query, candidate);
        assert.deepEqual(ids, reference.input_ids[i], `ids of pair ${i}`);
        assert.deepEqual(typeIds, reference.token_type_ids[i], `segments of pair ${i}`);
      });
    });

    test('the right concept outscores a wrong one for plain mentions', async () => {
      const [right, wrong] = await int8.score([
        { query: '[M] breast cancer [/M]', candidate: 'Breast Neoplasms ; Cancer' },
        { query: '[M] breast cancer [/M]', candidate: 'Cystic Fibrosis ; Genetic disease (inborn)' },
      ]);
      assert.ok(right! > wrong!, `${right} vs ${wrong}`);
    });

    test('grouped pairs score exactly as each group alone', async () => {
      const groups = pairs.map((_, i) => (i < pairs.length / 2 ? 1 : 2));
      const together = await int8.score(pairs, groups);
      const half = groups.lastIndexOf(1) + 1;
      assert.deepEqual(together.slice(0, half), await int8.score(pairs.slice(0, half)));
      assert.deepEqual(together.slice(half), await int8.score(pairs.slice(half)));
    });
  });
}
