import type { ScoredMention } from './mention-record.ts';
import { applyScores, applySums, DEFAULT_CALIBRATION_BINS, emptySums, summarize, type MetricSums, type MetricSummary, type StoredMetricSums } from './metric-sums.ts';

export interface MetricsReport {
  overall: MetricSummary;
  /** By NER label, keys sorted. */
  byLabel: Record<string, MetricSummary>;
  /** By the gold concept's semantic type (a mention with several types counts in each), keys sorted. */
  bySemanticType: Record<string, MetricSummary>;
}

/** An accumulator's sums, overall and per group: what a time bucket of a window persists. */
export interface AccumulatorSums {
  totals: MetricSums;
  byLabel: Record<string, MetricSums>;
  bySemanticType: Record<string, MetricSums>;
}

/** Accumulator sums as a state file may hold them (metric-sums.ts StoredMetricSums). */
export interface StoredAccumulatorSums {
  totals: StoredMetricSums;
  byLabel: Record<string, StoredMetricSums>;
  bySemanticType: Record<string, StoredMetricSums>;
}

/**
 * Running sums of scored mentions, overall and per group, that mentions can be added to and
 * removed from (the sidecar's rolling windows). Because every sum is an integer (metric-sums.ts),
 * the report after any sequence of adds and removes equals `computeMetrics` over the mentions
 * still in, to the last bit. The one implementation behind offline `cuilink eval`, `cuilink
 * compare` and the evaluator.
 */
export class MetricsAccumulator {
  private readonly bins: number;
  private readonly totals: MetricSums;
  private readonly labels = new Map<string, MetricSums>();
  private readonly types = new Map<string, MetricSums>();

  constructor(options: { bins?: number } = {}) {
    this.bins = options.bins ?? DEFAULT_CALIBRATION_BINS;
    if (!Number.isInteger(this.bins) || this.bins < 1) throw new RangeError(`calibration bins must be a positive integer, got ${this.bins}`);
    this.totals = emptySums(this.bins);
  }

  get size(): number {
    return this.totals.n;
  }

  add(mention: ScoredMention): void {
    this.apply(mention, 1);
  }

  /** Removes a mention added before; removing one never added corrupts the sums (callers keep the window). */
  remove(mention: ScoredMention): void {
    this.apply(mention, -1);
  }

  /** A copy of the sums, overall and per group. */
  sums(): AccumulatorSums {
    const copy = (sums: MetricSums): MetricSums => structuredClone(sums);
    const groups = (map: Map<string, MetricSums>) => Object.fromEntries([...map].map(([key, sums]) => [key, copy(sums)]));
    return { totals: copy(this.totals), byLabel: groups(this.labels), bySemanticType: groups(this.types) };
  }

  /**
   * Adds (sign 1) or removes (sign -1) the sums of mentions added to another accumulator: a whole
   * time bucket at once. `relabel` maps each NER label (labels restored from a state file are
   * bounded again as they load); labels it maps together are summed.
   */
  applySums(other: StoredAccumulatorSums, sign: 1 | -1, relabel: (label: string) => string = (label) => label): void {
    applySums(this.totals, other.totals, sign);
    for (const [label, sums] of Object.entries(other.byLabel)) this.applyGroupSums(this.labels, relabel(label), sums, sign);
    for (const [type, sums] of Object.entries(other.bySemanticType)) this.applyGroupSums(this.types, type, sums, sign);
  }

  /** The overall summary alone (no per-group work). */
  overall(): MetricSummary {
    return summarize(this.totals);
  }

  report(): MetricsReport {
    return { overall: summarize(this.totals), byLabel: summarizeGroups(this.labels), bySemanticType: summarizeGroups(this.types) };
  }

  private apply(mention: ScoredMention, sign: 1 | -1): void {
    applyScores(this.totals, mention.scores, sign);
    this.applyGroup(this.labels, mention.label, mention, sign);
    for (const type of new Set(mention.semanticTypes)) this.applyGroup(this.types, type, mention, sign);
  }

  private applyGroup(groups: Map<string, MetricSums>, key: string, mention: ScoredMention, sign: 1 | -1): void {
    let sums = groups.get(key);
    if (!sums) {
      sums = emptySums(this.bins);
      groups.set(key, sums);
    }
    applyScores(sums, mention.scores, sign);
    // An emptied group disappears, as it would from a batch over the remaining mentions.
    if (sums.n === 0) groups.delete(key);
  }

  private applyGroupSums(groups: Map<string, MetricSums>, key: string, other: StoredMetricSums, sign: 1 | -1): void {
    let sums = groups.get(key);
    if (!sums) {
      sums = emptySums(this.bins);
      groups.set(key, sums);
    }
    applySums(sums, other, sign);
    if (sums.n === 0) groups.delete(key);
  }
}

function summarizeGroups(groups: Map<string, MetricSums>): Record<string, MetricSummary> {
  // fromEntries defines own properties: a label named '__proto__' stays a group instead of becoming the prototype.
  return Object.fromEntries([...groups.keys()].sort().map((key) => [key, summarize(groups.get(key)!)]));
}

/** The batch computation: a fresh accumulator over all mentions. */
export function computeMetrics(mentions: Iterable<ScoredMention>, options: { bins?: number } = {}): MetricsReport {
  const acc = new MetricsAccumulator(options);
  for (const m of mentions) acc.add(m);
  return acc.report();
}
