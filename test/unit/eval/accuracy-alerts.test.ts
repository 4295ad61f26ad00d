import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AccuracyAlerts, alertLogLine } from '../../../src/eval/sidecar/accuracy-alerts.ts';
import { emptySums, summarize, type MetricSummary } from '../../../src/eval/metrics/metric-sums.ts';
import { CALIBRATION_MIN_LINKS } from '../../../src/eval/metrics/calibration-test.ts';

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

/** A summary with `binned` calibrated samples of `n` and the given calibration p. */
const calibration = (n: number, binned: number, calibrationP: number | null): MetricSummary => {
  const base = summarize(emptySums());
  return { ...base, n, acc1: 0.9, calibrationP, reliability: base.reliability.map((bin, b) => ({ ...bin, n: b === 9 ? binned : 0 })) };
};

test('calibration rule: fires below alpha, judged only on enough calibrated samples, and keeps its state below them', () => {
  const alerts = new AccuracyAlerts({ calibrationAlpha: 0.01, minSamples: 250 });
  // 400 samples but only 240 with a calibrated confidence: not judged, however small p.
  assert.deepEqual(alerts.update('count', calibration(400, 240, 1e-6), 0), []);
  assert.deepEqual(alerts.current().map((s) => [s.rule, s.firing]), [['calibration', false]]);
  const fired = alerts.update('count', calibration(400, 260, 0.004), 10);
  assert.deepEqual(fired.map((s) => [s.rule, s.firing, s.calibrationP, s.threshold, s.since]), [['calibration', true, 0.004, 0.01, 10]]);
  assert.equal(alertLogLine(fired[0]!), 'ALERT firing: calibration test p 0.004 in the count window is below --calibration-alpha (0.01): confidence and acc@1 differ by more than noise');
  // No p (every confidence 0 or 1) or too few: not judged, still firing on the p it fired on.
  assert.deepEqual(alerts.update('count', calibration(400, 260, null), 20), []);
  assert.deepEqual(alerts.update('count', calibration(10, 10, 0.9), 30), []);
  assert.deepEqual(alerts.current().map((s) => [s.firing, s.calibrationP, s.since]), [[true, 0.004, 10]]);
  // Exactly alpha does not fire: it resolves.
  const resolved = alerts.update('count', calibration(400, 260, 0.01), 40);
  assert.deepEqual(resolved.map((s) => [s.firing, s.calibrationP]), [[false, 0.01]]);
  assert.equal(alertLogLine(resolved[0]!), 'ALERT resolved: calibration test p 0.010 in the count window is back at or above --calibration-alpha (0.01)');
  assert.equal(alertLogLine({ ...resolved[0]!, firing: true, calibrationP: 3.2e-9 }).split(' in ')[0], 'ALERT firing: calibration test p 3.2e-9');
});

test('the calibration rule judges no window of fewer than CALIBRATION_MIN_LINKS calibrated links, whatever --min-samples says', () => {
  const alerts = new AccuracyAlerts({ calibrationAlpha: 0.01, minSamples: 50 });
  assert.deepEqual(alerts.update('count', calibration(CALIBRATION_MIN_LINKS, CALIBRATION_MIN_LINKS - 1, 1e-9), 0), []);
  assert.deepEqual(alerts.update('count', calibration(CALIBRATION_MIN_LINKS, CALIBRATION_MIN_LINKS, 1e-9), 1).map((s) => [s.rule, s.firing]), [['calibration', true]]);
});

test('without --calibration-alpha there is no calibration rule, whatever the p', () => {
  const alerts = new AccuracyAlerts({ floor: 0.5, minSamples: 1 });
  assert.deepEqual(alerts.update('count', calibration(100, 100, 1e-12), 0), []);
  assert.deepEqual(alerts.current().map((s) => s.rule), ['floor']);
});
