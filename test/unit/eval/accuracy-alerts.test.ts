import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AccuracyAlerts } from '../../../src/eval/sidecar/accuracy-alerts.ts';
import { emptySums, summarize, type MetricSummary } from '../../../src/eval/metrics/metric-sums.ts';

const summary = (n: number, acc1: number | null): MetricSummary => ({ ...summarize(emptySums()), n, acc1 });

test('a window that runs short of samples keeps its alert state: no data is not a recovery', () => {
  const alerts = new AccuracyAlerts({ floor: 0.7, minSamples: 2 });
  assert.deepEqual(alerts.update('time', summary(1, 0), 0), [], 'one sample is not judged');
  assert.equal(alerts.current()[0]!.firing, false);
  assert.deepEqual(alerts.update('time', summary(3, 0), 10).map((s) => s.firing), [true]);
  // The stream goes quiet: the time window empties, then holds one sample.
  assert.deepEqual(alerts.update('time', summary(0, null), 120_000), []);
  assert.deepEqual(alerts.update('time', summary(1, 1), 130_000), []);
  assert.deepEqual(alerts.current().map((s) => [s.firing, s.acc1, s.since]), [[true, 0, 10]]);
  // Enough samples again, above the floor: now it resolves.
  assert.deepEqual(alerts.update('time', summary(2, 1), 140_000).map((s) => [s.firing, s.acc1]), [[false, 1]]);
});
