import type { MentionScores } from './mention-record.ts';

/**
 * Real-valued per-mention scores are added as integers in units of 1e-9. Integer sums are exact
 * and order-free, so a rolling window that adds and removes mentions in any order ends on exactly
 * the sums (hence exactly the numbers) of a batch over the same mentions. Sums stay exact up to
 * 2^53 units: about nine million mentions per group, far beyond any window or corpus here.
 */
export const UNIT = 1e9;

export function toUnits(value: number): number {
  return Math.round(value * UNIT);
}

export const DEFAULT_CALIBRATION_BINS = 10;

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
}

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
  };
}

/** Reliability bin of a confidence in units; 1.0 falls in the last bin. */
export function binOf(confidenceUnits: number, bins: number): number {
  return Math.min(bins - 1, Math.floor((confidenceUnits * bins) / UNIT));
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
}

/** Mentions in the reliability bins: those with a calibrated confidence, what ECE averages over. */
export function binnedCount(sums: MetricSums): number {
  return sums.binCount.reduce((total, count) => total + count, 0);
}

/** Adds (sign 1) or removes (sign -1) the sums of a group of mentions: a time bucket of a window. */
export function applySums(sums: MetricSums, other: MetricSums, sign: 1 | -1): void {
  if (other.binCount.length !== sums.binCount.length) throw new RangeError(`cannot combine sums over ${other.binCount.length} and ${sums.binCount.length} calibration bins`);
  for (const key of ['n', 'hit1', 'hit5', 'reciprocalRank', 'similarity', 'ndcg5', 'predictedNil', 'goldNil', 'nilAgree'] as const) sums[key] += sign * other[key];
  for (const key of ['binCount', 'binConfidence', 'binHits'] as const) other[key].forEach((value, b) => (sums[key][b]! += sign * value));
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
    reliability,
  };
}
