import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fitLogistic, type LogisticModel } from '../../../src/eval/confidence/logistic-fit.ts';
import { InputError } from '../../../src/kb/errors.ts';
import { lcg } from '../../support/lcg.ts';

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/** The fitted model's probability for a raw (unstandardized) feature row. */
function predict(model: LogisticModel, row: readonly number[]): number {
  let z = model.bias;
  for (let j = 0; j < row.length; j++) z += model.weights[j]! * ((row[j]! - model.mean[j]!) / model.scale[j]!);
  return sigmoid(z);
}

const TRUE_BIAS = 0.5;
const TRUE_WEIGHTS = [1.5, -0.8];
const trueProbability = (row: readonly number[]) => sigmoid(TRUE_BIAS + TRUE_WEIGHTS[0]! * row[0]! + TRUE_WEIGHTS[1]! * row[1]!);

/** Samples from a known 2-feature logistic model: x1 uniform in [-2, 2], x2 uniform in [0, 5]. */
function sample(n: number, seed: number): { rows: number[][]; labels: boolean[] } {
  const rand = lcg(seed);
  const rows: number[][] = [];
  const labels: boolean[] = [];
  for (let i = 0; i < n; i++) {
    const row = [rand() * 4 - 2, rand() * 5];
    rows.push(row);
    labels.push(rand() < trueProbability(row));
  }
  return { rows, labels };
}

test('fitLogistic recovers the probabilities and raw-unit weights of a known logistic model', () => {
  const { rows, labels } = sample(4000, 12345);
  const model = fitLogistic(rows, labels, { l2: 0.01 });
  assert.equal(model.weights.length, 2);
  assert.equal(model.mean.length, 2);
  assert.equal(model.scale.length, 2);
  const mae = rows.reduce((s, r) => s + Math.abs(predict(model, r) - trueProbability(r)), 0) / rows.length;
  assert.ok(mae < 0.05, `mean absolute probability error ${mae}`);
  // Standardized weights back in raw units: w_j / scale_j, bias − Σ w_j·mean_j/scale_j.
  const raw = model.weights.map((w, j) => w / model.scale[j]!);
  const rawBias = model.bias - model.weights.reduce((s, w, j) => s + (w * model.mean[j]!) / model.scale[j]!, 0);
  assert.ok(Math.abs(raw[0]! - TRUE_WEIGHTS[0]!) < 0.25, `w1 ${raw[0]}`);
  assert.ok(Math.abs(raw[1]! - TRUE_WEIGHTS[1]!) < 0.2, `w2 ${raw[1]}`);
  assert.ok(Math.abs(rawBias - TRUE_BIAS) < 0.4, `bias ${rawBias}`);
  // Standardization is the data's: mean ≈ centre of each uniform range, scale ≈ its standard deviation.
  assert.ok(Math.abs(model.mean[0]! - 0) < 0.1 && Math.abs(model.mean[1]! - 2.5) < 0.1, `mean ${model.mean}`);
  assert.ok(Math.abs(model.scale[0]! - 4 / Math.sqrt(12)) < 0.05 && Math.abs(model.scale[1]! - 5 / Math.sqrt(12)) < 0.05, `scale ${model.scale}`);
  assert.ok(model.iterations >= 1 && Number.isFinite(model.logLoss) && model.logLoss > 0 && model.logLoss < Math.log(2));
});

test('a fit beats the constant model and a stronger penalty shrinks the weights', () => {
  const { rows, labels } = sample(1000, 777);
  const loose = fitLogistic(rows, labels, { l2: 0.01 });
  const tight = fitLogistic(rows, labels, { l2: 500 });
  const rate = labels.filter(Boolean).length / labels.length;
  const constantLoss = -(rate * Math.log(rate) + (1 - rate) * Math.log(1 - rate));
  assert.ok(loose.logLoss < constantLoss - 0.05, `${loose.logLoss} vs constant ${constantLoss}`);
  for (let j = 0; j < 2; j++) assert.ok(Math.abs(tight.weights[j]!) < Math.abs(loose.weights[j]!), `weight ${j}`);
});

test('fitLogistic is deterministic: two fits of the same data are identical', () => {
  const { rows, labels } = sample(500, 42);
  const a = fitLogistic(rows, labels, { l2: 0.1 });
  const b = fitLogistic(rows.map((r) => [...r]), [...labels], { l2: 0.1 });
  assert.deepEqual(a, b);
});

test('bad calibration data is refused with BAD_CALIBRATION_DATA', () => {
  const cases: [string, () => unknown][] = [
    ['empty rows', () => fitLogistic([], [])],
    ['all labels true', () => fitLogistic([[1], [2], [3]], [true, true, true])],
    ['all labels false', () => fitLogistic([[1], [2], [3]], [false, false, false])],
    ['rows of different lengths', () => fitLogistic([[1, 2], [3], [4, 5]], [true, false, true])],
    ['a NaN feature', () => fitLogistic([[1, 2], [3, NaN], [4, 5]], [true, false, true])],
    ['an infinite feature', () => fitLogistic([[1, 2], [3, Infinity], [4, 5]], [true, false, true])],
    ['fewer labels than rows', () => fitLogistic([[1], [2], [3]], [true, false])],
    ['more labels than rows', () => fitLogistic([[1], [2]], [true, false, true])],
  ];
  for (const [name, fit] of cases) {
    assert.throws(
      fit,
      (error: unknown) => error instanceof InputError && error.code === 'BAD_CALIBRATION_DATA',
      name,
    );
  }
});

test('a constant feature gets weight 0 and scale 1, and does not disturb the others', () => {
  const { rows, labels } = sample(1000, 99);
  const withConstant = rows.map((r) => [r[0]!, 3, r[1]!]);
  const model = fitLogistic(withConstant, labels, { l2: 0.01 });
  assert.ok(Math.abs(model.mean[1]! - 3) < 1e-9, `mean ${model.mean[1]}`);
  assert.equal(model.scale[1], 1);
  assert.ok(Math.abs(model.weights[1]!) < 1e-9, `constant weight ${model.weights[1]}`);
  const without = fitLogistic(rows, labels, { l2: 0.01 });
  assert.ok(Math.abs(model.weights[0]! - without.weights[0]!) < 1e-6);
  assert.ok(Math.abs(model.weights[2]! - without.weights[1]!) < 1e-6);
  assert.ok(Math.abs(model.bias - without.bias) < 1e-6);
});
