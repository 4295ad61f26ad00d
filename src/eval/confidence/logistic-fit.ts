import { InputError } from '../../kb/errors.ts';

export interface LogisticModel {
  mean: number[];
  scale: number[];
  weights: number[];
  bias: number;
  /** Newton steps taken and the final mean log-loss on the fitting data. */
  iterations: number;
  logLoss: number;
}

/**
 * Refuses examples no calibration can be fit on (none, one class only, ragged or non-finite rows);
 * returns the number of features.
 */
export function checkExamples(rows: readonly ArrayLike<number>[], labels: readonly boolean[]): number {
  const n = rows.length;
  if (n === 0) throw new InputError('no examples to fit a calibration on (is the split empty?)', 'BAD_CALIBRATION_DATA');
  if (labels.length !== n) throw new InputError(`${n} feature rows but ${labels.length} labels`, 'BAD_CALIBRATION_DATA');
  const positives = labels.filter(Boolean).length;
  if (positives === 0 || positives === n) throw new InputError(`all ${n} examples are ${positives === 0 ? 'wrong' : 'right'}: a calibration needs both`, 'BAD_CALIBRATION_DATA');
  const d = rows[0]!.length;
  for (const r of rows) {
    if (r.length !== d) throw new InputError(`feature rows differ in length (${d} and ${r.length})`, 'BAD_CALIBRATION_DATA');
    for (let j = 0; j < d; j++) if (!Number.isFinite(r[j]!)) throw new InputError(`feature ${j} is not a finite number`, 'BAD_CALIBRATION_DATA');
  }
  return d;
}

/**
 * L2-regularized logistic regression by Newton's method on standardized features (a constant
 * feature gets scale 1 and, through the penalty, weight 0). Deterministic: no random start, no
 * shuffling, so one command on one split always writes the same calibration.
 */
export function fitLogistic(rows: readonly ArrayLike<number>[], labels: readonly boolean[], options: { l2?: number; maxIterations?: number } = {}): LogisticModel {
  const n = rows.length;
  const d = checkExamples(rows, labels);
  const l2 = options.l2 ?? 1;
  const mean = new Array<number>(d).fill(0);
  const scale = new Array<number>(d).fill(0);
  for (const r of rows) for (let j = 0; j < d; j++) mean[j]! += r[j]! / n;
  for (const r of rows) for (let j = 0; j < d; j++) scale[j]! += (r[j]! - mean[j]!) ** 2 / n;
  for (let j = 0; j < d; j++) scale[j] = scale[j]! > 1e-12 ? Math.sqrt(scale[j]!) : 1;
  const x = rows.map((r) => Array.from({ length: d }, (_, j) => (r[j]! - mean[j]!) / scale[j]!));
  // Parameters: d weights then the bias (unpenalized).
  const theta = new Array<number>(d + 1).fill(0);
  let iterations = 0;
  let logLoss = Infinity;
  for (; iterations < (options.maxIterations ?? 50); iterations++) {
    const grad = new Array<number>(d + 1).fill(0);
    const hess = Array.from({ length: d + 1 }, () => new Array<number>(d + 1).fill(0));
    let loss = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[i]!;
      let z = theta[d]!;
      for (let j = 0; j < d; j++) z += theta[j]! * xi[j]!;
      const p = 1 / (1 + Math.exp(-z));
      const y = labels[i] ? 1 : 0;
      loss -= y * Math.log(Math.max(p, 1e-15)) + (1 - y) * Math.log(Math.max(1 - p, 1e-15));
      const r = p - y;
      const w = p * (1 - p);
      for (let j = 0; j <= d; j++) {
        const xj = j === d ? 1 : xi[j]!;
        grad[j]! += r * xj;
        for (let k = 0; k <= j; k++) hess[j]![k]! += w * xj * (k === d ? 1 : xi[k]!);
      }
    }
    for (let j = 0; j < d; j++) {
      grad[j]! += l2 * theta[j]!;
      hess[j]![j]! += l2;
      loss += (l2 * theta[j]! ** 2) / 2;
    }
    hess[d]![d]! += 1e-9;
    for (let j = 0; j <= d; j++) for (let k = j + 1; k <= d; k++) hess[j]![k] = hess[k]![j]!;
    const step = solve(hess, grad);
    let moved = 0;
    for (let j = 0; j <= d; j++) {
      theta[j]! -= step[j]!;
      moved = Math.max(moved, Math.abs(step[j]!));
    }
    logLoss = loss / n;
    if (moved < 1e-8) break;
  }
  return { mean, scale, weights: theta.slice(0, d), bias: theta[d]!, iterations, logLoss };
}

/** Solves A·x = b (A symmetric positive definite) by Gaussian elimination with partial pivoting. */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let pivot = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[pivot]![c]!)) pivot = r;
    [m[c], m[pivot]] = [m[pivot]!, m[c]!];
    const diag = m[c]![c]!;
    if (Math.abs(diag) < 1e-15) continue;
    for (let r = c + 1; r < n; r++) {
      const f = m[r]![c]! / diag;
      for (let k = c; k <= n; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) {
    let s = m[r]![n]!;
    for (let k = r + 1; k < n; k++) s -= m[r]![k]! * x[k]!;
    x[r] = Math.abs(m[r]![r]!) < 1e-15 ? 0 : s / m[r]![r]!;
  }
  return x;
}
