import { test } from 'node:test';
import assert from 'node:assert/strict';
import { auroc, calibratedEce, precisionAtCoverage, reliability, summarizeConfidence, type ConfidencePoint } from '../../../src/eval/confidence/selective-metrics.ts';

const p = (confidence: number, correct: boolean): ConfidencePoint => ({ confidence, correct });
const close = (actual: number | null, expected: number, message?: string) => {
  assert.ok(actual !== null, message ?? 'null');
  assert.ok(Math.abs(actual - expected) < 1e-12, `${message ?? ''} ${actual} ≠ ${expected}`);
};

/** AUROC by counting every (right, wrong) pair, ties half. */
function pairwiseAuroc(points: readonly ConfidencePoint[]): number {
  const pos = points.filter((x) => x.correct);
  const neg = points.filter((x) => !x.correct);
  let wins = 0;
  for (const a of pos) for (const b of neg) wins += a.confidence > b.confidence ? 1 : a.confidence === b.confidence ? 0.5 : 0;
  return wins / (pos.length * neg.length);
}

test('auroc: perfect separation is 1, reversed is 0, all tied is 0.5', () => {
  assert.equal(auroc([p(0.9, true), p(0.1, false), p(0.8, true), p(0.2, false)]), 1);
  assert.equal(auroc([p(0.9, false), p(0.1, true), p(0.8, false), p(0.2, true)]), 0);
  assert.equal(auroc([p(0.5, true), p(0.5, false), p(0.5, true), p(0.5, false), p(0.5, false)]), 0.5);
});

test('auroc is null when one class is empty', () => {
  assert.equal(auroc([]), null);
  assert.equal(auroc([p(0.9, true), p(0.2, true)]), null);
  assert.equal(auroc([p(0.9, false), p(0.2, false)]), null);
});

test('auroc counts ties half (hand-computed)', () => {
  // Right {0.8, 0.5}, wrong {0.5, 0.2}: pairs 1 + 1 + ½ + 1 = 3.5 of 4.
  close(auroc([p(0.5, false), p(0.8, true), p(0.2, false), p(0.5, true)]), 0.875);
  // Right {0.9, 0.6, 0.6}, wrong {0.6, 0.3}: 1 + 1 + ½ + 1 + ½ + 1 = 5 of 6.
  close(auroc([p(0.6, true), p(0.3, false), p(0.6, false), p(0.9, true), p(0.6, true)]), 5 / 6);
});

test('auroc equals the pairwise count on larger inputs with many ties', () => {
  let state = 7;
  const rand = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 4294967296);
  for (let trial = 0; trial < 5; trial++) {
    const points = Array.from({ length: 60 }, () => p(Math.floor(rand() * 6) / 5, rand() < 0.6));
    close(auroc(points), pairwiseAuroc(points), `trial ${trial}`);
  }
});

test('precisionAtCoverage keeps the most confident share and breaks ties against the claim', () => {
  // Input order puts the right 0.8 before the wrong one; the metric must still rank the wrong first.
  const points = [p(0.7, true), p(0.8, true), p(0.5, false), p(0.9, true), p(0.8, false)];
  // Sorted: 0.9 ✓, 0.8 ✗, 0.8 ✓, 0.7 ✓, 0.5 ✗.
  assert.equal(precisionAtCoverage(points, 0.2), 1);
  assert.equal(precisionAtCoverage(points, 0.4), 0.5);
  close(precisionAtCoverage(points, 0.6), 2 / 3);
  assert.equal(precisionAtCoverage(points, 0.8), 0.75);
  assert.equal(precisionAtCoverage(points, 1), 0.6);
  // round(5 × 0.05) = 0 kept: no precision.
  assert.equal(precisionAtCoverage(points, 0.05), null);
  assert.equal(precisionAtCoverage([], 0.8), null);
});

test('reliability: equal-width bins, 1.0 in the last bin, empty bins null', () => {
  const { rows, ece } = reliability([p(1, true), p(0, false), p(0.55, true)]);
  assert.equal(rows.length, 10);
  assert.equal(rows[9]!.n, 1);
  assert.equal(rows[9]!.confidence, 1);
  assert.equal(rows[9]!.accuracy, 1);
  assert.equal(rows[0]!.n, 1);
  assert.equal(rows[0]!.accuracy, 0);
  assert.equal(rows[5]!.n, 1);
  assert.deepEqual(rows.map((r) => r.n), [1, 0, 0, 0, 0, 1, 0, 0, 0, 1]);
  assert.equal(rows[3]!.confidence, null);
  assert.equal(rows[3]!.accuracy, null);
  close(rows[2]!.lo, 0.2);
  close(rows[2]!.hi, 0.3);
  // Gaps: |0 − 0| + |1 − 0.55| + |1 − 1| over 3 points.
  close(ece, 0.45 / 3);
  assert.equal(reliability([]).ece, null);
  assert.ok(reliability([]).rows.every((r) => r.n === 0));
});

test('reliability ECE is Σ n_b/n · |acc_b − conf_b| (hand-computed, 4 bins)', () => {
  const points = [p(0.1, false), p(0.2, true), p(0.6, true), p(0.7, true), p(1.0, true), p(0.9, false)];
  const { rows, ece } = reliability(points, 4);
  assert.deepEqual(rows.map((r) => [r.lo, r.hi, r.n]), [
    [0, 0.25, 2],
    [0.25, 0.5, 0],
    [0.5, 0.75, 2],
    [0.75, 1, 2],
  ]);
  close(rows[0]!.confidence, 0.15);
  close(rows[0]!.accuracy, 0.5);
  close(rows[2]!.confidence, 0.65);
  close(rows[2]!.accuracy, 1);
  close(rows[3]!.confidence, 0.95);
  close(rows[3]!.accuracy, 0.5);
  // (2·0.35 + 2·0.35 + 2·0.45) / 6 = 2.3 / 6.
  close(ece, 2.3 / 6);
});

test('summarizeConfidence reports n, accuracy, AUROC, precision at 80/90% coverage and ECE', () => {
  // One point per decile bin; right for bins 3..8, wrong for 0, 1, 2 and the most confident, 9.
  const points = Array.from({ length: 10 }, (_, i) => p((i + 0.5) / 10, i >= 3 && i !== 9));
  const s = summarizeConfidence(points);
  assert.equal(s.n, 10);
  close(s.accuracy, 0.6);
  // Each right point beats wrong 0, 1, 2 and loses to 9: 18 of 24 pairs.
  close(s.auroc, 0.75);
  // Top 8 = bins 9..2: six right.
  close(s.precisionAt80, 0.75);
  // Top 9 = bins 9..1: six right.
  close(s.precisionAt90, 6 / 9);
  // Gaps 0.05 + 0.15 + 0.25 + 0.65 + 0.55 + 0.45 + 0.35 + 0.25 + 0.15 + 0.95 = 3.8 over 10.
  close(s.ece, 0.38);
  assert.equal(s.reliability.length, 10);
  assert.ok(s.reliability.every((r) => r.n === 1));

  const empty = summarizeConfidence([]);
  assert.deepEqual(
    { n: empty.n, accuracy: empty.accuracy, auroc: empty.auroc, p80: empty.precisionAt80, p90: empty.precisionAt90, ece: empty.ece },
    { n: 0, accuracy: null, auroc: null, p80: null, p90: null, ece: null },
  );
  assert.equal(empty.calibratedEce, null);
  assert.equal(s.calibratedEce?.samples, 1000);
});

test('calibratedEce: certain confidences leave nothing to chance', () => {
  // Confidence 1 and 0 draw right and wrong every time: a calibrated model reads ECE 0 here.
  const sure = [p(1, true), p(0, false), p(1, true)];
  const c = calibratedEce(sure, 200)!;
  assert.equal(c.median, 0);
  assert.equal(c.p95, 0);
  // Every draw reaches the observed 0: p = (200 + 1) / 201.
  assert.equal(c.pValue, 1);
  // The same confidences, all wrong: observed ECE 2/3, which no calibrated draw reaches.
  const wrong = calibratedEce([p(1, false), p(0, true), p(1, false)], 200)!;
  close(wrong.pValue, 1 / 201);
  assert.equal(calibratedEce([], 200), null);
});

test('calibratedEce: a calibrated sample reads its floor; a shifted one falls outside it', () => {
  const random = (() => {
    let state = 11;
    return () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 4294967296);
  })();
  const confidences = Array.from({ length: 800 }, () => 0.3 + 0.65 * random());
  const calibrated = confidences.map((c) => p(c, random() < c));
  const shifted = confidences.map((c) => p(c, random() < c - 0.1));
  const floor = calibratedEce(calibrated)!;
  // Binned ECE of 800 calibrated links sits well above 0 (the noise floor), far under 0.1.
  assert.ok(floor.median > 0.01 && floor.median < 0.05, `median ${floor.median}`);
  assert.ok(floor.p95 > floor.median);
  assert.ok(floor.pValue > 0.05, `a calibrated sample is not flagged (p ${floor.pValue})`);
  const off = calibratedEce(shifted)!;
  assert.ok(off.pValue < 0.01, `10 points of overconfidence are flagged (p ${off.pValue})`);
  // Same confidences, same seed: the same floor, whatever the labels.
  assert.deepEqual([off.median, off.p95], [floor.median, floor.p95]);
});

test('calibratedEce: links of one group are drawn together, which widens the floor', () => {
  // 60 notes, each repeating one name 8 times at confidence 0.7 (or 0.9): right or wrong together.
  const points = Array.from({ length: 480 }, (_, i) => ({ ...p(i % 2 ? 0.7 : 0.9, true), group: `note${Math.floor(i / 16)}-${i % 2}` }));
  const grouped = calibratedEce(points, 400)!;
  const independent = calibratedEce(points.map(({ confidence, correct }) => ({ confidence, correct })), 400)!;
  assert.ok(grouped.median > 2 * independent.median, `grouped ${grouped.median} vs independent ${independent.median}`);
  // A right and a wrong link in one group never happens in the grouped draws (both right: ECE 0.3, both wrong: 0.7),
  // so its observed 0.2 is under every draw.
  const split = [{ ...p(0.7, true), group: 'g' }, { ...p(0.7, false), group: 'g' }];
  assert.equal(calibratedEce(split, 400)!.pValue, 1);
});
