import { calibrationChiSquare, loneCalibrationVariance } from './calibration-test.ts';
import type { MentionScores } from './mention-record.ts';
import { binOf, DEFAULT_CALIBRATION_BINS, toUnits, UNIT } from './metric-units.ts';

export { binOf, DEFAULT_CALIBRATION_BINS, toUnits, UNIT };

/** Everything the aggregate metrics are computed from. */
export interface MetricSums {
  n: number;
  hit1: number;
  hit5: number;
  reciprocalRank: number;
  similarity: number;
  ndcg5: number;
  predictedNil: number;
  goldNil: number;
  /** Predicted NIL and gold NIL. */
  nilAgree: number;
  /**
   * Per reliability bin (equal width over [0, 1]): mentions, summed confidence (units), top-1 hits.
   * Only mentions with a calibrated confidence are binned, so the bins may hold fewer than n.
   */
  binCount: number[];
  binConfidence: number[];
  binHits: number[];
  /**
   * Per bin, the variance of its hit count under perfect calibration (units): the sum of its
   * mentions' `calibrationVariance` (calibration-test.ts).
   */
  binVariance: number[];
}

/** Sums as a state file may hold them: time buckets written before the variance was kept lack it. */
export type StoredMetricSums = Omit<MetricSums, 'binVariance'> & { binVariance?: number[] };

export function emptySums(bins = DEFAULT_CALIBRATION_BINS): MetricSums {
  return {
    n: 0,
    hit1: 0,
    hit5: 0,
    reciprocalRank: 0,
    similarity: 0,
    ndcg5: 0,
    predictedNil: 0,
    goldNil: 0,
    nilAgree: 0,
    binCount: new Array<number>(bins).fill(0),
    binConfidence: new Array<number>(bins).fill(0),
    binHits: new Array<number>(bins).fill(0),
    binVariance: new Array<number>(bins).fill(0),
  };
}

/** Adds (sign 1) or removes (sign -1) one mention's scores. */
export function applyScores(sums: MetricSums, s: MentionScores, sign: 1 | -1): void {
  sums.n += sign;
  sums.hit1 += sign * Number(s.hit1);
  sums.hit5 += sign * Number(s.hit5);
  sums.reciprocalRank += sign * toUnits(s.reciprocalRank);
  sums.similarity += sign * toUnits(s.similarity);
  sums.ndcg5 += sign * toUnits(s.ndcg5);
  sums.predictedNil += sign * Number(s.predictedNil);
  sums.goldNil += sign * Number(s.goldNil);
  sums.nilAgree += sign * Number(s.predictedNil && s.goldNil);
  // A ranking score is not a probability: a mention without a calibrated confidence has no bin.
  // Decided by the mention alone, so its removal undoes exactly what its addition did.
  if (s.confidence === null) return;
  const conf = toUnits(s.confidence);
  const bin = binOf(conf, sums.binCount.length);
  sums.binCount[bin]! += sign;
  sums.binConfidence[bin]! += sign * conf;
  sums.binHits[bin]! += sign * Number(s.hit1);
  // A record scored before the variance was kept (a prediction file, a state file's window) is taken as alone.
  sums.binVariance[bin]! += sign * toUnits(s.calibrationVariance ?? loneCalibrationVariance(s.confidence));
}

/** Mentions in the reliability bins: those with a calibrated confidence, what ECE averages over. */
export function binnedCount(sums: MetricSums): number {
  return sums.binCount.reduce((total, count) => total + count, 0);
}

/**
 * Adds (sign 1) or removes (sign -1) the sums of a group of mentions: a time bucket of a window.
 * Sums without `binVariance` (a bucket saved before it was kept) are given each bin's
 * n·c̄(1 − c̄), c̄ its mean confidence: the mentions' p(1 − p) are gone, and by Jensen this is at
 * least their sum, so the test errs towards not firing on those buckets. Decided by the sums
 * alone, so removing them takes back what adding them gave.
 */
export function applySums(sums: MetricSums, other: StoredMetricSums, sign: 1 | -1): void {
  if (other.binCount.length !== sums.binCount.length) throw new RangeError(`cannot combine sums over ${other.binCount.length} and ${sums.binCount.length} calibration bins`);
  for (const key of ['n', 'hit1', 'hit5', 'reciprocalRank', 'similarity', 'ndcg5', 'predictedNil', 'goldNil', 'nilAgree'] as const) sums[key] += sign * other[key];
  for (const key of ['binCount', 'binConfidence', 'binHits'] as const) other[key].forEach((value, b) => (sums[key][b]! += sign * value));
  (other.binVariance ?? impliedBinVariance(other)).forEach((value, b) => (sums.binVariance[b]! += sign * value));
}

/** n·c̄(1 − c̄) per bin, in units: the most the variance of n links of mean confidence c̄ can be. */
function impliedBinVariance(sums: StoredMetricSums): number[] {
  return sums.binCount.map((count, b) => {
    if (count <= 0) return 0;
    const mean = sums.binConfidence[b]! / UNIT / count;
    return toUnits(count * loneCalibrationVariance(Math.min(1, Math.max(0, mean))));
  });
}

export interface ReliabilityBin {
  lo: number;
  hi: number;
  n: number;
  /** Mean confidence in the bin; null when empty. */
  confidence: number | null;
  /** Share of top-1 hits in the bin; null when empty. */
  accuracy: number | null;
}

/** The aggregate metrics of one group of mentions. Ratios with an empty denominator are null. */
export interface MetricSummary {
  n: number;
  acc1: number | null;
  acc5: number | null;
  mrr: number | null;
  /** Share of mentions the linker called NIL. */
  nilRate: number | null;
  /** Of the mentions called NIL, the share whose gold is not in the KB. */
  nilPrecision: number | null;
  /** Of the mentions whose gold is not in the KB, the share called NIL. */
  nilRecall: number | null;
  predictedNil: number;
  goldNil: number;
  /** Mean 1 / (1 + d) of the top prediction. */
  similarity: number | null;
  ndcg5: number | null;
  /**
   * Expected calibration error: Σ_b (n_b / N) · |accuracy_b − confidence_b| with accuracy = acc@1,
   * over the N mentions with a calibrated confidence (the bins' n, which sum to n when every link
   * has one); null when none has.
   */
  ece: number | null;
  /**
   * The analytic, grouped calibration test (calibration-test.ts): P(χ² ≥ calibrationChiSquare) on
   * calibrationDf degrees of freedom were the confidence perfectly calibrated. Small: the gap
   * between confidence and acc@1 is more than sampling noise. Null (df 0) when no bin has variance.
   */
  calibrationP: number | null;
  calibrationChiSquare: number | null;
  calibrationDf: number;
  reliability: ReliabilityBin[];
}

function ratio(numerator: number, denominator: number): number | null {
  return denominator === 0 ? null : numerator / denominator;
}

/** ECE · N in units, an integer: (n_b / N) · |hits_b / n_b − conf_b / n_b| = |hits_b − conf_b| / N, summed over bins. */
export function calibrationGapUnits(sums: MetricSums): number {
  let gap = 0;
  sums.binCount.forEach((_, b) => {
    gap += Math.abs(sums.binHits[b]! * UNIT - sums.binConfidence[b]!);
  });
  return gap;
}

export function summarize(sums: MetricSums): MetricSummary {
  const { n } = sums;
  const bins = sums.binCount.length;
  const calibrationGap = calibrationGapUnits(sums);
  const calibration = calibrationChiSquare(sums.binHits, sums.binConfidence, sums.binVariance);
  const reliability = sums.binCount.map((count, b): ReliabilityBin => {
    const hits = sums.binHits[b]!;
    const conf = sums.binConfidence[b]!;
    return { lo: b / bins, hi: (b + 1) / bins, n: count, confidence: ratio(conf / UNIT, count), accuracy: ratio(hits, count) };
  });
  return {
    n,
    acc1: ratio(sums.hit1, n),
    acc5: ratio(sums.hit5, n),
    mrr: ratio(sums.reciprocalRank / UNIT, n),
    nilRate: ratio(sums.predictedNil, n),
    nilPrecision: ratio(sums.nilAgree, sums.predictedNil),
    nilRecall: ratio(sums.nilAgree, sums.goldNil),
    predictedNil: sums.predictedNil,
    goldNil: sums.goldNil,
    similarity: ratio(sums.similarity / UNIT, n),
    ndcg5: ratio(sums.ndcg5 / UNIT, n),
    ece: ratio(calibrationGap / UNIT, binnedCount(sums)),
    calibrationP: calibration?.p ?? null,
    calibrationChiSquare: calibration?.chiSquare ?? null,
    calibrationDf: calibration?.df ?? 0,
    reliability,
  };
}
