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

test('restart: a window rebuilt from its retained entries and time buckets reports the same numbers', () => {
  const w = new RollingWindows({ lastN: 50, lastMs: 60_000 });
  for (let i = 0; i < 200; i++) w.add(sample(i, i % 4 !== 0), 1_000 + i * 100);
  const now = 1_000 + 200 * 100;
  const saved = JSON.parse(JSON.stringify({ entries: w.retained(), timeBuckets: w.timeBuckets() }));
  const restored = new RollingWindows({ lastN: 50, lastMs: 60_000 }, saved.entries, now, saved.timeBuckets);
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

test('a high gold rate keeps the time window and what a snapshot persists bounded, with exact metrics', () => {
  const limits = { lastN: 10, lastMs: 60_000 };
  const w = new RollingWindows(limits);
  const all: ScoredMention[] = [];
  // A backfill: 50,000 samples within one minute, all in the time window.
  for (let i = 0; i < 50_000; i++) {
    const s = sample(i, i % 5 < 3);
    all.push(s);
    w.add(s, 1_000_000 + Math.floor(i / 1000));
  }
  assert.deepEqual(w.reports().time.overall, computeMetrics(all).overall);
  assert.ok(w.retained().length <= limits.lastN);
  const saved = JSON.parse(JSON.stringify({ entries: w.retained(), timeBuckets: w.timeBuckets() }));
  assert.ok(JSON.stringify(saved).length < 100_000, 'the persisted windows do not grow with the sample rate');
  const restored = new RollingWindows(limits, saved.entries, 1_000_100, saved.timeBuckets);
  w.advance(1_000_100);
  assert.deepEqual(restored.reports(), w.reports());
});

test('the time window moves by buckets of a sixtieth of its length, never dropping a sample younger than T', () => {
  const w = new RollingWindows({ lastN: 1, lastMs: 60_000 }); // buckets of 1 s
  const samples = [sample(0, true), sample(1, false), sample(2, true)];
  w.add(samples[0]!, 0);
  w.add(samples[1]!, 1_500);
  w.add(samples[2]!, 2_999);
  w.advance(61_000); // cutoff 1,000: the bucket [0, 1,000) is all older than T
  assert.deepEqual(w.reports().time.overall, computeMetrics(samples.slice(1)).overall);
  w.advance(61_600); // cutoff 1,600: the sample at 1,500 shares its bucket with one younger than T, so it stays
  assert.equal(w.reports().time.overall.n, 2);
  w.advance(63_000); // cutoff 3,000: all three buckets are older than T
  assert.equal(w.reports().time.overall.n, 0);
});

test('a state file written before the time window was kept as sums (samples only) still loads', () => {
  const old = [0, 1, 2, 3].map((i) => ({ at: 1_000 * i, mention: sample(i, i !== 2) }));
  const w = new RollingWindows({ lastN: 2, lastMs: 60_000 }, old, 3_000);
  assert.equal(w.reports().count.overall.n, 2);
  assert.deepEqual(w.reports().time.overall, computeMetrics(old.map((e) => e.mention)).overall);
});
