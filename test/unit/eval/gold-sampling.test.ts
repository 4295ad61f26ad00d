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
