import { InputError } from '../../kb/errors.ts';
import { treeValue, type TreeNode, type TreesCalibrationModel } from '../../link/calibration-model.ts';
import { checkExamples } from './logistic-fit.ts';

export interface TreeFitOptions {
  /** Boosting rounds (one tree each). */
  rounds: number;
  /** Learning rate: each tree's leaves count this much. */
  rate: number;
  /** Splits from the root to a leaf at most. */
  depth: number;
  /** No split leaves fewer examples than this on a side. */
  minLeaf: number;
  /** L2 penalty on the leaf values (Newton step −G / (H + l2)). */
  l2: number;
}

/** Candidate thresholds per feature: at most this many, between quantiles of its distinct values. */
const MAX_CUTS = 16;

/**
 * Gradient-boosted regression trees for the log-loss (second-order, XGBoost-style leaf values and
 * split gain), on the raw features. Deterministic: the candidate thresholds are midpoints between
 * distinct values at fixed quantile positions, the first best split wins ties, no sampling — so one
 * command on one split always writes the same calibration. Small on purpose (a few thousand
 * examples, 32 features): every tree scans every candidate threshold of every feature.
 */
export function fitBoostedTrees(rows: readonly ArrayLike<number>[], labels: readonly boolean[], options: TreeFitOptions): TreesCalibrationModel & { logLoss: number } {
  const d = checkExamples(rows, labels);
  if (!(options.rounds >= 1 && options.depth >= 1 && options.minLeaf >= 1 && options.rate > 0 && options.l2 >= 0)) {
    throw new InputError(`tree fit: rounds, depth and minLeaf must be ≥ 1, rate > 0, l2 ≥ 0 (got ${JSON.stringify(options)})`, 'BAD_CALIBRATION_DATA');
  }
  const n = rows.length;
  const y: number[] = labels.map((l) => (l ? 1 : 0));
  const positives = y.reduce((a, b) => a + b, 0);
  const base = Math.log(positives / (n - positives));
  const cuts = Array.from({ length: d }, (_, j) => candidateCuts(rows.map((r) => r[j]!)));
  // Each example's bin per feature: bin k holds values ≤ cuts[k] and > cuts[k − 1].
  const bins = rows.map((r) => cuts.map((c, j) => {
    let k = 0;
    while (k < c.length && r[j]! > c[k]!) k++;
    return k;
  }));
  const logit = new Float64Array(n).fill(base);
  const trees: TreeNode[] = [];
  const all = Array.from({ length: n }, (_, i) => i);
  for (let round = 0; round < options.rounds; round++) {
    const g = new Float64Array(n);
    const h = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const p = 1 / (1 + Math.exp(-logit[i]!));
      g[i] = p - y[i]!;
      h[i] = p * (1 - p);
    }
    const tree = grow(all, options.depth, { rows, bins, cuts, g, h, options });
    trees.push(tree);
    for (let i = 0; i < n; i++) logit[i]! += options.rate * treeValue(tree, rows[i]!);
  }
  let loss = 0;
  for (let i = 0; i < n; i++) {
    const p = 1 / (1 + Math.exp(-logit[i]!));
    loss -= y[i]! * Math.log(Math.max(p, 1e-15)) + (1 - y[i]!) * Math.log(Math.max(1 - p, 1e-15));
  }
  return { kind: 'trees', base, rate: options.rate, trees, logLoss: loss / n };
}

function candidateCuts(values: number[]): number[] {
  const distinct = [...new Set(values)].sort((a, b) => a - b);
  const count = Math.min(MAX_CUTS, distinct.length - 1);
  const cuts: number[] = [];
  for (let k = 1; k <= count; k++) {
    const at = Math.floor((k * (distinct.length - 1)) / (count + 1));
    cuts.push((distinct[at]! + distinct[at + 1]!) / 2);
  }
  return [...new Set(cuts)];
}

interface GrowContext {
  rows: readonly ArrayLike<number>[];
  bins: number[][];
  cuts: number[][];
  g: Float64Array;
  h: Float64Array;
  options: TreeFitOptions;
}

function grow(members: number[], depth: number, c: GrowContext): TreeNode {
  const { g, h, options } = c;
  let G = 0;
  let H = 0;
  for (const i of members) {
    G += g[i]!;
    H += h[i]!;
  }
  const leaf = { leaf: -G / (H + options.l2) };
  if (depth === 0 || members.length < 2 * options.minLeaf) return leaf;
  const parentScore = (G * G) / (H + options.l2);
  let best = { gain: 1e-9, feature: -1, threshold: 0 };
  for (let j = 0; j < c.cuts.length; j++) {
    const nb = c.cuts[j]!.length + 1;
    const sumG = new Float64Array(nb);
    const sumH = new Float64Array(nb);
    const count = new Int32Array(nb);
    for (const i of members) {
      const b = c.bins[i]![j]!;
      sumG[b]! += g[i]!;
      sumH[b]! += h[i]!;
      count[b]!++;
    }
    let gl = 0;
    let hl = 0;
    let nl = 0;
    for (let k = 0; k < nb - 1; k++) {
      gl += sumG[k]!;
      hl += sumH[k]!;
      nl += count[k]!;
      if (nl < options.minLeaf || members.length - nl < options.minLeaf) continue;
      const gain = (gl * gl) / (hl + options.l2) + (G - gl) ** 2 / (H - hl + options.l2) - parentScore;
      if (gain > best.gain) best = { gain, feature: j, threshold: c.cuts[j]![k]! };
    }
  }
  if (best.feature < 0) return leaf;
  const below = members.filter((i) => c.rows[i]![best.feature]! <= best.threshold);
  const above = members.filter((i) => c.rows[i]![best.feature]! > best.threshold);
  return { feature: best.feature, threshold: best.threshold, below: grow(below, depth - 1, c), above: grow(above, depth - 1, c) };
}
