import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ScoredMention } from '../../../src/eval/metrics/mention-record.ts';
import { computeMetrics } from '../../../src/eval/metrics/metrics-accumulator.ts';
import { RollingWindows } from '../../../src/eval/sidecar/rolling-windows.ts';

function sample(i: number, hit: boolean): ScoredMention {
  return {
    noteId: `n${i}`, mentionId: 'm', goldIds: ['X:1'], predicted: ['X:1'], nil: false, topScore: 0.8, label: i % 2 ? 'A' : 'B', semanticTypes: ['T047'],
    scores: { hit1: hit, hit5: hit, reciprocalRank: hit ? 1 : 0, similarity: hit ? 1 : 1 / 3, ndcg5: hit ? 0.7 : 0.1, goldNil: false, predictedNil: false, confidence: 0.8 },
  };
}

test('count window holds the last N samples; time window the last T ms; each equals a batch over its members', () => {
  const w = new RollingWindows({ lastN: 3, lastMs: 100 });
  const samples = Array.from({ length: 6 }, (_, i) => sample(i, i % 3 === 0));
  samples.forEach((s, i) => w.add(s, i * 30)); // at 0, 30, 60, 90, 120, 150
  const r = w.reports();
  assert.deepEqual({ ...r.count, limit: undefined }, { ...computeMetrics(samples.slice(3)), limit: undefined });
  // At 150 the time window keeps samples at ≥ 50: 60, 90, 120, 150.
  assert.deepEqual({ ...r.time, limitMs: undefined }, { ...computeMetrics(samples.slice(2)), limitMs: undefined });
  w.advance(1000);
  assert.equal(w.reports().time.overall.n, 0);
  assert.equal(w.reports().count.overall.n, 3); // the count window does not age
  assert.equal(w.retained().length, 3);
});

test('restart: a window rebuilt from its retained entries reports the same numbers', () => {
  const w = new RollingWindows({ lastN: 50, lastMs: 60_000 });
  for (let i = 0; i < 200; i++) w.add(sample(i, i % 4 !== 0), 1_000 + i * 100);
  const now = 1_000 + 200 * 100;
  const saved = JSON.parse(JSON.stringify(w.retained()));
  const restored = new RollingWindows({ lastN: 50, lastMs: 60_000 }, saved, now);
  w.advance(now);
  assert.deepEqual(restored.reports(), w.reports());
  assert.equal(restored.reports().count.overall.n, 50);
});

test('a long stream is compacted without changing the numbers', () => {
  const w = new RollingWindows({ lastN: 10, lastMs: 5 });
  const all: ScoredMention[] = [];
  for (let i = 0; i < 5000; i++) {
    const s = sample(i, i % 7 < 4);
    all.push(s);
    w.add(s, i);
  }
  assert.deepEqual(w.reports().count.overall, computeMetrics(all.slice(-10)).overall);
  assert.deepEqual(w.reports().time.overall, computeMetrics(all.slice(-6)).overall); // at 4999 keeps ≥ 4994
  assert.ok(w.retained().length <= 10);
});
