import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../../src/kb/errors.ts';
import { MAX_TREE_DEPTH, type TreeNode } from '../../../src/link/calibration-model.ts';
import { CALIBRATION_FORMAT, ConfidenceCalibrator, type CalibrationFile } from '../../../src/link/confidence-calibrator.ts';
import { CONFIDENCE_FEATURES } from '../../../src/link/confidence-features.ts';

// A calibration file's trees are read by recursive code (the schema, the shape check): a tree
// nested deep enough overflowed the stack, and a cyclic one handed to the constructor never ended.
// cuilink calibrate grows trees at most 8 splits deep (--depth); anything past MAX_TREE_DEPTH is refused.
// And a number JSON can only write as 1e400 (Infinity) loaded, and made confidences NaN.

const models = { biEncoder: 'a'.repeat(64), crossEncoder: null };
const deepTree = (depth: number) => `${'{"feature":0,"threshold":0.5,"above":{"leaf":1},"below":'.repeat(depth)}{"leaf":0}${'}'.repeat(depth)}`;

function fileWithTree(tree: string): string {
  const head = { format: CALIBRATION_FORMAT, version: 'deep', features: [...CONFIDENCE_FEATURES], models };
  return JSON.stringify({ ...head, right: { kind: 'trees', base: 0, rate: 1, trees: ['TREE'] } }).replace('"TREE"', tree);
}

const refusedNaming = (path: string, key: RegExp) => (error: unknown) => error instanceof InputError && error.code === 'BAD_CALIBRATION' && error.message.includes(path) && key.test(error.message);

test('a calibration file whose tree is nested 100k splits deep is refused with BAD_CALIBRATION naming the file and the tree', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-calibration-depth-'));
  try {
    const path = join(dir, 'calibration.json');
    writeFileSync(path, fileWithTree(deepTree(100_000)));
    assert.throws(() => ConfidenceCalibrator.load(path), refusedNaming(path, /right\.trees\.0/));
    // Eight times as deep as cuilink calibrate grows them loads; a split more is refused.
    writeFileSync(path, fileWithTree(deepTree(MAX_TREE_DEPTH)));
    assert.equal(ConfidenceCalibrator.load(path).probability(new Float64Array(CONFIDENCE_FEATURES.length)), 0.5);
    writeFileSync(path, fileWithTree(deepTree(MAX_TREE_DEPTH + 1)));
    assert.throws(() => ConfidenceCalibrator.load(path), refusedNaming(path, /right\.trees\.0/));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a cyclic tree handed to the constructor is refused, not walked forever', () => {
  const node = { feature: 0, threshold: 0.5, below: { leaf: 0 }, above: { leaf: 1 } } as { feature: number; threshold: number; below: TreeNode; above: TreeNode };
  node.below = node;
  const file: CalibrationFile = { format: CALIBRATION_FORMAT, version: 'cyclic', features: [...CONFIDENCE_FEATURES], right: { kind: 'trees', base: 0, rate: 1, trees: [node] }, models, fit: {} };
  assert.throws(() => new ConfidenceCalibrator(file, '0'.repeat(64), 'cyclic.json'), refusedNaming('cyclic.json', /right\.trees/));
});

test('a calibration file with a number that reads as Infinity is refused naming the file and the key, not turned into NaN confidences', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-calibration-infinite-'));
  try {
    const path = join(dir, 'calibration.json');
    writeFileSync(path, fileWithTree('{"feature":0,"threshold":0.5,"below":{"leaf":1e400},"above":{"leaf":-1e400}}'));
    assert.throws(() => ConfidenceCalibrator.load(path), refusedNaming(path, /right\.trees\.0\.below\.leaf/));
    const zeros = CONFIDENCE_FEATURES.map(() => 0);
    const logistic = { format: CALIBRATION_FORMAT, version: 'inf', features: [...CONFIDENCE_FEATURES], models, right: { kind: 'logistic', mean: zeros, scale: zeros.map(() => 1), weights: zeros, bias: 'BIAS' } };
    writeFileSync(path, JSON.stringify(logistic).replace('"BIAS"', '-1e999'));
    assert.throws(() => ConfidenceCalibrator.load(path), refusedNaming(path, /right\.bias/));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
