import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fitBoostedTrees, type TreeFitOptions } from '../../../src/eval/confidence/tree-fit.ts';
import { fitLogistic } from '../../../src/eval/confidence/logistic-fit.ts';
import { modelLogit, type TreeNode } from '../../../src/link/calibration-model.ts';
import { InputError } from '../../../src/kb/errors.ts';
import { lcg } from '../../support/lcg.ts';

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
const OPTIONS: TreeFitOptions = { rounds: 150, rate: 0.1, depth: 2, minLeaf: 10, l2: 1 };

/** x0, x1 uniform in [0, 1]; right when exactly one of them is above 0.5 (XOR), with 5% of labels flipped. */
function xorSample(n: number, seed: number): { rows: number[][]; labels: boolean[] } {
  const rand = lcg(seed);
  const rows: number[][] = [];
  const labels: boolean[] = [];
  for (let i = 0; i < n; i++) {
    const row = [rand(), rand(), rand()];
    const xor = row[0]! > 0.5 !== row[1]! > 0.5;
    rows.push(row);
    labels.push(rand() < 0.05 ? !xor : xor);
  }
  return { rows, labels };
}

function meanLogLoss(p: (row: number[]) => number, rows: number[][], labels: boolean[]): number {
  return rows.reduce((sum, row, i) => sum - Math.log(Math.max(1e-15, labels[i] ? p(row) : 1 - p(row))), 0) / rows.length;
}

test('boosted trees learn an interaction a logistic model cannot, and hold on fresh samples', () => {
  const train = xorSample(800, 1);
  const fresh = xorSample(800, 2);
  const trees = fitBoostedTrees(train.rows, train.labels, OPTIONS);
  const logistic = fitLogistic(train.rows, train.labels, { l2: 1 });
  const treeP = (row: number[]) => sigmoid(modelLogit(trees, row));
  const logisticP = (row: number[]) => sigmoid(modelLogit({ kind: 'logistic', ...logistic }, row));
  assert.ok(Math.abs(meanLogLoss(logisticP, fresh.rows, fresh.labels) - Math.log(2)) < 0.05, 'logistic: no better than a coin');
  assert.ok(meanLogLoss(treeP, fresh.rows, fresh.labels) < 0.35, `trees: ${meanLogLoss(treeP, fresh.rows, fresh.labels)}`);
  assert.ok(treeP([0.9, 0.1, 0.5]) > 0.8 && treeP([0.1, 0.9, 0.5]) > 0.8, 'one above: right');
  assert.ok(treeP([0.9, 0.9, 0.5]) < 0.2 && treeP([0.1, 0.1, 0.5]) < 0.2, 'both or neither: wrong');
  assert.ok(Math.abs(trees.logLoss - meanLogLoss(treeP, train.rows, train.labels)) < 1e-9, 'the reported log-loss is the fit data\'s');
});

test('the base logit is the log-odds of the labels; a tree never splits off fewer than minLeaf examples', () => {
  const { rows, labels } = xorSample(300, 3);
  const model = fitBoostedTrees(rows, labels, { ...OPTIONS, rounds: 5, minLeaf: 40 });
  const right = labels.filter(Boolean).length;
  assert.ok(Math.abs(model.base - Math.log(right / (rows.length - right))) < 1e-12);
  assert.equal(model.trees.length, 5);
  const reach = (node: TreeNode, members: number[][]): void => {
    assert.ok(members.length >= 40, `a node of ${members.length} examples`);
    if ('leaf' in node) return;
    reach(node.below, members.filter((r) => r[node.feature]! <= node.threshold));
    reach(node.above, members.filter((r) => r[node.feature]! > node.threshold));
  };
  for (const tree of model.trees) reach(tree, rows);
  const depth = (node: TreeNode): number => ('leaf' in node ? 0 : 1 + Math.max(depth(node.below), depth(node.above)));
  assert.ok(model.trees.every((t) => depth(t) <= OPTIONS.depth));
  assert.ok(model.trees.some((t) => depth(t) === OPTIONS.depth), 'the interaction is worth two levels');
});

test('fitBoostedTrees is deterministic: two fits of the same data are identical', () => {
  const { rows, labels } = xorSample(400, 4);
  assert.deepEqual(fitBoostedTrees(rows, labels, OPTIONS), fitBoostedTrees(rows, labels, OPTIONS));
});

test('bad data or options are refused with BAD_CALIBRATION_DATA', () => {
  const bad = (error: unknown) => error instanceof InputError && error.code === 'BAD_CALIBRATION_DATA';
  assert.throws(() => fitBoostedTrees([], [], OPTIONS), bad);
  assert.throws(() => fitBoostedTrees([[1], [2]], [true, true], OPTIONS), bad);
  assert.throws(() => fitBoostedTrees([[1], [Number.NaN]], [true, false], OPTIONS), bad);
  for (const options of [{ rounds: 0 }, { depth: 0 }, { minLeaf: 0 }, { rate: 0 }, { l2: -1 }]) {
    assert.throws(() => fitBoostedTrees([[1], [2]], [true, false], { ...OPTIONS, ...options }), bad, JSON.stringify(options));
  }
});
