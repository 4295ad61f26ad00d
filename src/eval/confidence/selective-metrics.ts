import { seededRandom } from '../seeded-random.ts';

/**
 * How well a confidence separates right links from wrong ones, for a job that keeps only the
 * links it trusts: AUROC (the chance that a random right link outranks a random wrong one),
 * precision at a coverage (keep the most confident share), and expected calibration error.
 * Pure functions of (confidence, right) pairs; `cuilink eval` and `cuilink calibrate` report them.
 */
export interface ConfidencePoint {
  confidence: number;
  correct: boolean;
  /**
   * Links that stand or fall together (`cuilink eval`: a note's); calibratedEce draws them
   * together. Absent: independent.
   */
  group?: string;
}

/** Mann–Whitney AUROC with ties counted half; null when one class is empty. */
export function auroc(points: readonly ConfidencePoint[]): number | null {
  const sorted = [...points].sort((a, b) => a.confidence - b.confidence);
  const positives = sorted.filter((p) => p.correct).length;
  const negatives = sorted.length - positives;
  if (positives === 0 || negatives === 0) return null;
  let rankSum = 0;
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j < sorted.length && sorted[j]!.confidence === sorted[i]!.confidence) j++;
    const midRank = (i + 1 + j) / 2;
    for (let k = i; k < j; k++) if (sorted[k]!.correct) rankSum += midRank;
    i = j;
  }
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

/** Share right among the `coverage` most confident links (ties broken against the claim: wrong first). */
export function precisionAtCoverage(points: readonly ConfidencePoint[], coverage: number): number | null {
  const keep = Math.round(points.length * coverage);
  if (keep === 0) return null;
  const sorted = [...points].sort((a, b) => b.confidence - a.confidence || Number(a.correct) - Number(b.correct));
  return sorted.slice(0, keep).filter((p) => p.correct).length / keep;
}

export interface ReliabilityRow {
  lo: number;
  hi: number;
  n: number;
  confidence: number | null;
  accuracy: number | null;
}

/** Equal-width reliability bins over [0, 1] (1.0 falls in the last) and ECE = Σ (n_b/n)·|acc_b − conf_b|. */
export function reliability(points: readonly ConfidencePoint[], bins = 10): { rows: ReliabilityRow[]; ece: number | null } {
  const n = new Array<number>(bins).fill(0);
  const conf = new Array<number>(bins).fill(0);
  const hits = new Array<number>(bins).fill(0);
  for (const p of points) {
    const b = Math.min(bins - 1, Math.max(0, Math.floor(p.confidence * bins)));
    n[b]!++;
    conf[b]! += p.confidence;
    hits[b]! += Number(p.correct);
  }
  let gap = 0;
  const rows = n.map((count, b) => {
    gap += Math.abs(hits[b]! - conf[b]!);
    return { lo: b / bins, hi: (b + 1) / bins, n: count, confidence: count ? conf[b]! / count : null, accuracy: count ? hits[b]! / count : null };
  });
  return { rows, ece: points.length ? gap / points.length : null };
}

/** What a perfectly calibrated confidence would read as ECE on some links (calibratedEce). */
export interface CalibratedEce {
  median: number;
  p95: number;
  pValue: number;
  samples: number;
  /** Per reliability bin, the share right that 95% of calibrated draws fall within (null for an empty bin). */
  bins: ({ low: number; high: number } | null)[];
}

export const CALIBRATED_ECE_SAMPLES = 1000;
export const CALIBRATED_ECE_SEED = 1;

/**
 * The ECE a perfectly calibrated confidence would read on these very confidences: each link's
 * right/wrong drawn as Bernoulli(confidence), `samples` times from a fixed seed. Binned ECE on a
 * few hundred links is biased up by its own noise, so an ECE means something only beside this.
 * Links of one `group` (a note's: calibration-test.ts mentionGroup) share one uniform draw (right
 * when it falls under their confidence): each stays Bernoulli(confidence), but a note's links
 * stand or fall together as in real text, which widens the spread (independent draws, or draws
 * shared only by a repeated name, understate it: bench/results/calibration-test-validity.txt).
 * `pValue`: the share of calibrated draws that read at least the observed ECE (one-sided, +1
 * smoothed): small means the gap is more than sampling.
 */
export function calibratedEce(points: readonly ConfidencePoint[], samples = CALIBRATED_ECE_SAMPLES, seed = CALIBRATED_ECE_SEED): CalibratedEce | null {
  const observed = reliability(points).ece;
  if (observed === null || samples < 1) return null;
  const random = seededRandom(seed);
  const drawn = points.map((p) => ({ confidence: p.confidence, correct: false }));
  const groups = new Map<string, number>();
  const groupOf = points.map((p, i) => {
    if (p.group === undefined) return -1 - i;
    let g = groups.get(p.group);
    if (g === undefined) groups.set(p.group, (g = groups.size));
    return g;
  });
  const shared = new Float64Array(groups.size);
  const eces: number[] = [];
  const binShares: number[][] = [];
  for (let s = 0; s < samples; s++) {
    for (let g = 0; g < shared.length; g++) shared[g] = random();
    drawn.forEach((d, i) => {
      const g = groupOf[i]!;
      d.correct = (g >= 0 ? shared[g]! : random()) < d.confidence;
    });
    const { rows, ece } = reliability(drawn);
    eces.push(ece!);
    rows.forEach((r, b) => (binShares[b] ??= []).push(r.accuracy ?? NaN));
  }
  const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  eces.sort((a, b) => a - b);
  // A draw that ties the observed ECE to float rounding counts as reaching it.
  const reaching = eces.filter((e) => e >= observed - 1e-12).length;
  const bins = binShares.map((shares) => {
    if (shares.some(Number.isNaN)) return null;
    shares.sort((a, b) => a - b);
    return { low: quantile(shares, 0.025), high: quantile(shares, 0.975) };
  });
  return { median: quantile(eces, 0.5), p95: quantile(eces, 0.95), pValue: (reaching + 1) / (samples + 1), samples, bins };
}

export interface ConfidenceSummary {
  n: number;
  accuracy: number | null;
  auroc: number | null;
  precisionAt80: number | null;
  precisionAt90: number | null;
  ece: number | null;
  /** What a calibrated confidence would read as ECE here (null without links). */
  calibratedEce: CalibratedEce | null;
  reliability: ReliabilityRow[];
}

export function summarizeConfidence(points: readonly ConfidencePoint[]): ConfidenceSummary {
  const { rows, ece } = reliability(points);
  return {
    n: points.length,
    accuracy: points.length ? points.filter((p) => p.correct).length / points.length : null,
    auroc: auroc(points),
    precisionAt80: precisionAtCoverage(points, 0.8),
    precisionAt90: precisionAtCoverage(points, 0.9),
    ece,
    calibratedEce: calibratedEce(points),
    reliability: rows,
  };
}
