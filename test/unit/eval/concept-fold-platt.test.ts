import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pooledFoldPlatt, withPlatt } from '../../../src/eval/confidence/concept-fold-platt.ts';
import { fitBoostedTrees, type TreeFitOptions } from '../../../src/eval/confidence/tree-fit.ts';
import { fitLogistic } from '../../../src/eval/confidence/logistic-fit.ts';
import { modelLogit, type CalibrationModel } from '../../../src/link/calibration-model.ts';
import { InputError } from '../../../src/kb/errors.ts';
import { lcg } from '../../support/lcg.ts';

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
const TREES: TreeFitOptions = { rounds: 150, rate: 0.1, depth: 3, minLeaf: 10, l2: 1 };
const fitTrees = (rows: Float64Array[], labels: boolean[]): CalibrationModel => {
  const { logLoss: _, ...model } = fitBoostedTrees(rows, labels, TREES);
  return model;
};

/**
 * Mentions of `concepts` concepts, 60 each. Feature 0 is a code that names the concept (as the
 * stage, length and name-fit features together name a frequent concept of a corpus); each concept
 * has its own accuracy. Feature 1 carries a real signal. A fit can learn each concept's accuracy
 * through feature 0, which says nothing about a concept it has not seen.
 */
function sample(concepts: number, seed: number): { rows: Float64Array[]; labels: boolean[]; groups: string[] } {
  const rand = lcg(seed);
  const rows: Float64Array[] = [];
  const labels: boolean[] = [];
  const groups: string[] = [];
  for (let c = 0; c < concepts; c++) {
    const code = rand();
    const accuracy = 0.3 + 0.65 * rand();
    for (let i = 0; i < 60; i++) {
      const right = rand() < accuracy;
      rows.push(Float64Array.from([code, (right ? 0.55 : 0.45) + 0.5 * (rand() - 0.5)]));
      labels.push(right);
      groups.push(`${seed}:${c}`);
    }
  }
  return { rows, labels, groups };
}

const logLoss = (p: (x: Float64Array) => number, rows: Float64Array[], labels: boolean[]) =>
  rows.reduce((sum, x, i) => sum - Math.log(Math.max(1e-15, labels[i] ? p(x) : 1 - p(x))), 0) / rows.length;

test('a map fit on concept folds makes a fit that learned its concepts honest about new ones', () => {
  const fit = sample(15, 1);
  const fresh = sample(40, 2);
  const model = fitTrees(fit.rows, fit.labels);
  const map = pooledFoldPlatt(fit.rows, fit.labels, [fit.groups], fitTrees);
  assert.ok(map.slope > 0 && map.slope < 0.8, `the map shrinks the fit's logits (slope ${map.slope})`);
  const mapped = withPlatt(model, map);
  const raw = logLoss((x) => sigmoid(modelLogit(model, x)), fresh.rows, fresh.labels);
  const honest = logLoss((x) => sigmoid(modelLogit(mapped, x)), fresh.rows, fresh.labels);
  assert.ok(honest < raw - 0.02, `log-loss on new concepts: ${honest} with the map, ${raw} without`);
  // In sample the unmapped fit looks better: what the map corrects is invisible without concept folds.
  assert.ok(logLoss((x) => sigmoid(modelLogit(model, x)), fit.rows, fit.labels) < logLoss((x) => sigmoid(modelLogit(mapped, x)), fit.rows, fit.labels));
});

test('the mapped model is the same kind, and its logit is slope · logit + intercept', () => {
  const { rows, labels } = sample(10, 3);
  const trees = fitTrees(rows, labels);
  const { mean, scale, weights, bias } = fitLogistic(rows, labels, { l2: 1 });
  const logistic: CalibrationModel = { kind: 'logistic', mean, scale, weights, bias };
  const map = { slope: 0.6, intercept: -0.25 };
  for (const model of [trees, logistic]) {
    const mapped = withPlatt(model, map);
    assert.equal(mapped.kind, model.kind);
    for (const x of rows.slice(0, 20)) assert.ok(Math.abs(modelLogit(mapped, x) - (0.6 * modelLogit(model, x) - 0.25)) < 1e-9);
  }
});

test('one concept, or groups that do not match the examples, is a clear error', () => {
  const { rows, labels } = sample(1, 4);
  assert.throws(() => pooledFoldPlatt(rows, labels, [rows.map(() => 'C1')], fitTrees), (e: unknown) => e instanceof InputError && /one fold/.test(e.message));
  assert.throws(() => pooledFoldPlatt(rows, labels, [['C1']], fitTrees), (e: unknown) => e instanceof InputError && /fold groups/.test(e.message));
});

test('concept folds that leave one class only are refused, naming the fold', () => {
  const rows = [0, 1, 2, 3].map((v) => Float64Array.from([v]));
  // Concept A is the only wrong one; seed 2 puts B in fold 1, A in fold 2: without fold 1 only A's wrong example is left.
  const groups = ['A', 'B', 'B', 'B'];
  assert.throws(() => pooledFoldPlatt(rows, [false, true, true, true], [groups], fitTrees, { folds: 2, seed: 2 }), (e: unknown) => e instanceof InputError && /without fold 1 of 2 every example left is wrong/.test(e.message));
});

test('pooled with folds that keep the concepts (by note), the map shrinks less: between the two readings', () => {
  const fit = sample(15, 1);
  // Notes of 10 mentions, cut across concepts: a note fold's held-out concepts are all in its fit.
  const notes = fit.rows.map((_, i) => `note-${i % 90}`);
  const byConcept = pooledFoldPlatt(fit.rows, fit.labels, [fit.groups], fitTrees);
  const byNote = pooledFoldPlatt(fit.rows, fit.labels, [notes], fitTrees);
  const pooled = pooledFoldPlatt(fit.rows, fit.labels, [fit.groups, notes], fitTrees);
  assert.ok(byConcept.slope < pooled.slope && pooled.slope < byNote.slope, `slopes: concept ${byConcept.slope}, pooled ${pooled.slope}, note ${byNote.slope}`);
});
