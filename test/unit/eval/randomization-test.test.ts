import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ScoredMention } from '../../../src/eval/metrics/mention-record.ts';
import { approximateRandomization, pairPredictions } from '../../../src/eval/randomization-test.ts';
import { seededRandom } from '../../../src/eval/seeded-random.ts';

function mention(i: number, hit: boolean, confidence = 0.7): ScoredMention {
  return {
    noteId: `n${Math.floor(i / 10)}`,
    mentionId: `m${i}`,
    goldIds: ['FIX:A'],
    predicted: hit ? ['FIX:A'] : ['FIX:B'],
    nil: false,
    topScore: confidence,
    label: 'Disease',
    semanticTypes: [],
    scores: { hit1: hit, hit5: hit, reciprocalRank: hit ? 1 : 0, similarity: hit ? 1 : 0.5, ndcg5: hit ? 0.8 : 0, goldNil: false, predictedNil: false, confidence },
  };
}

test('identical prediction files: every difference 0 and every defined p-value exactly 1', () => {
  const rng = seededRandom(7);
  const a = Array.from({ length: 120 }, (_, i) => mention(i, rng() < 0.6, rng()));
  const result = approximateRandomization(pairPredictions(a, [...a].reverse()), { shuffles: 500, seed: 1 });
  assert.equal(result.n, 120);
  for (const m of result.metrics) {
    if (m.difference === null) {
      assert.equal(m.pValue, null, m.metric); // NIL precision/recall: nothing was NIL
      continue;
    }
    assert.equal(m.difference, 0, m.metric);
    assert.equal(m.pValue, 1, m.metric);
  }
});

test('a clearly better system: small p-value for acc@1, reproducible from the seed', () => {
  const rng = seededRandom(11);
  // B hits every mention A hits, plus most of the others: acc@1 about 0.5 against 0.9.
  const a = Array.from({ length: 200 }, (_, i) => mention(i, rng() < 0.5));
  const b = a.map((m, i) => mention(i, m.scores.hit1 || rng() < 0.8));
  const pairs = pairPredictions(a, b);
  const first = approximateRandomization(pairs, { shuffles: 2000, seed: 42 });
  const acc1 = first.metrics.find((m) => m.metric === 'acc1')!;
  assert.ok(acc1.difference! > 0.3, `difference ${acc1.difference}`);
  // No shuffle reaches a 0.3+ gap on 200 mentions: p = (0 + 1) / (2000 + 1).
  assert.equal(acc1.pValue, 1 / 2001);
  assert.deepEqual(approximateRandomization(pairs, { shuffles: 2000, seed: 42 }), first);
});

test('a small difference on few mentions is not significant', () => {
  const a = Array.from({ length: 20 }, (_, i) => mention(i, i % 2 === 0));
  const b = a.map((m, i) => mention(i, m.scores.hit1 || i === 1));
  const acc1 = approximateRandomization(pairPredictions(a, b), { shuffles: 2000, seed: 3 }).metrics.find((m) => m.metric === 'acc1')!;
  assert.ok(Math.abs(acc1.difference! - 0.05) < 1e-12); // 11/20 − 10/20
  // Only mention 1 differs; swapping it (probability ½) keeps the gap at 0.05: p ≈ 1.
  assert.ok(acc1.pValue! > 0.9, `p ${acc1.pValue}`);
});

test('pairing: files must cover the same mentions, once each', () => {
  const a = [mention(0, true), mention(1, false)];
  assert.throws(() => pairPredictions(a, [mention(0, true)]), /n0\/m1 is in A but not in B/);
  assert.throws(() => pairPredictions([mention(0, true)], a), /n0\/m1 is in B but not in A/);
  assert.throws(() => pairPredictions([a[0]!, a[0]!], a), /appears twice/);
});

test('NIL precision: a shuffle whose gap equals the observed one counts, whatever fractions give it (exact p by hand)', () => {
  // Gold NIL g, A said NIL a, B said NIL b. Every other score is the same on both sides.
  const nilMention = (i: number, g: boolean, nil: boolean): ScoredMention => {
    const m = mention(i, false);
    return { ...m, nil, scores: { ...m.scores, goldNil: g, predictedNil: nil } };
  };
  const design: [boolean, boolean, boolean][] = [
    [false, false, true], // p1
    [false, false, true], // p2
    [true, false, true], // p3
    [true, true, false], // p4
  ];
  const a = design.map(([g, nil], i) => nilMention(i, g, nil));
  const b = design.map(([g, , nil], i) => nilMention(i, g, nil));
  // Observed: A 1 NIL, right (p4) → 1/1; B 3 NIL, 1 right (p3) → 1/3; |1/3 − 1| = 2/3.
  // The 16 swap patterns (k = p1 and p2 swapped, weights 1, 2, 1 for k = 0, 1, 2):
  //   p3, p4 both kept or both swapped: A 1/(1+k), B 1/(3−k): k 0 → 2/3, k 1 → 0, k 2 → 2/3      → 2 + 2 of 8 reach 2/3
  //   p3 swapped only: A 2/(2+k), B 0/(2−k): k 0 → 1, k 1 → |0 − 2/3| = 2/3, k 2 → B undefined    → 4 of 4
  //   p4 swapped only: A 0/k, B 2/(4−k): k 0 → A undefined, k 1 → 2/3, k 2 → 1                    → 4 of 4
  // 12 of 16 reach the observed gap (undefined counts as reaching it): exact p = 0.75. The 2/3 of
  // 0 against 2/3 is 0.6666666666666666 in floating point and the observed 1 − 1/3 0.6666666666666667.
  const nilP = approximateRandomization(pairPredictions(a, b), { shuffles: 20_000, seed: 5 }).metrics.find((m) => m.metric === 'nilPrecision')!;
  assert.ok(Math.abs(nilP.difference! - -2 / 3) < 1e-12);
  assert.ok(Math.abs(nilP.pValue! - 0.75) < 0.02, `p ${nilP.pValue}, exact 0.75`);
});
