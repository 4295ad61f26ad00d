import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inGoldSample } from '../../../src/eval/gold-sampling.ts';

test('gold sampling: deterministic per note id and seed, close to the fraction, 0 and 1 exact', () => {
  const ids = Array.from({ length: 10_000 }, (_, i) => String(1_000_000 + i * 7));
  const picked = ids.filter((id) => inGoldSample(id, 0.1, 42));
  assert.ok(Math.abs(picked.length / ids.length - 0.1) < 0.01, `${picked.length}`);
  assert.deepEqual(ids.filter((id) => inGoldSample(id, 0.1, 42)), picked);
  const other = ids.filter((id) => inGoldSample(id, 0.1, 43));
  assert.notDeepEqual(other, picked);
  assert.ok(ids.every((id) => inGoldSample(id, 1, 1)));
  assert.ok(!ids.some((id) => inGoldSample(id, 0, 1)));
  // A larger fraction keeps every note a smaller one picked (same seed).
  const quarter = new Set(ids.filter((id) => inGoldSample(id, 0.25, 42)));
  assert.ok(picked.every((id) => quarter.has(id)));
});

test('gold sampling: consecutive note ids are drawn independently (not all in or all out together)', () => {
  let allOrNone = 0;
  for (let block = 0; block < 200; block++) {
    const ids = Array.from({ length: 12 }, (_, i) => String(2000 + block * 12 + i));
    const picked = ids.filter((id) => inGoldSample(id, 0.5, 1 + (block % 7))).length;
    if (picked === 0 || picked === ids.length) allOrNone++;
  }
  // Independent draws: P(all or none of 12 at ½) = 1/2048 per block.
  assert.ok(allOrNone <= 2, `${allOrNone} of 200 blocks of consecutive ids were sampled all or nothing`);
});
