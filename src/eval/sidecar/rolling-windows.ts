import type { ScoredMention } from '../metrics/mention-record.ts';
import type { MetricSummary } from '../metrics/metric-sums.ts';
import { MetricsAccumulator, type MetricsReport, type StoredAccumulatorSums } from '../metrics/metrics-accumulator.ts';

export interface WindowLimits {
  /** The count window holds the last N joined gold samples. */
  lastN: number;
  /** The time window holds samples joined in the last T milliseconds (to within one bucket, TIME_WINDOW_BUCKETS). */
  lastMs: number;
}

/**
 * The time window is kept as sums per bucket of T / TIME_WINDOW_BUCKETS (a minute for the default
 * hour), not per sample: a backfill of the gold topic at thousands of labels a second would
 * otherwise grow the heap and the state file with every sample of the last T. A bucket leaves
 * the window once all of it is older than T, so the window's edge moves a bucket at a time.
 */
export const TIME_WINDOW_BUCKETS = 60;

export interface WindowEntry {
  /** When the sample was joined (epoch ms). */
  at: number;
  mention: ScoredMention;
}

/** The sums of the samples joined in [start, start + bucket length); a state file's may lack the variance (StoredMetricSums). */
export interface TimeBucket {
  start: number;
  sums: StoredAccumulatorSums;
}

export interface WindowReports {
  count: MetricsReport & { limit: number };
  time: MetricsReport & { limitMs: number };
}

/**
 * The two rolling windows over joined samples. The count window keeps its last N samples; the
 * time window keeps sums per time bucket (at most TIME_WINDOW_BUCKETS + 1), which is exact
 * because every metric is a sum over samples (metric-sums.ts). Each window has its own
 * accumulator that samples are added to on arrival and removed from as they (or their bucket)
 * fall out, so a report costs nothing and equals a batch over the window (metrics-accumulator.ts).
 * Memory and a snapshot are bounded by N and the bucket count, whatever the sample rate.
 */
export class RollingWindows {
  private readonly limits: WindowLimits;
  private readonly bucketMs: number;
  private entries: WindowEntry[] = [];
  // Absolute position in `entries` (shifted when the list is compacted).
  private countStart = 0;
  private buckets: { start: number; acc: MetricsAccumulator }[] = [];
  private readonly countAcc = new MetricsAccumulator();
  private readonly timeAcc = new MetricsAccumulator();

  /**
   * `restored`: the count window's entries. `restoredBuckets`: the time window's; absent in a
   * state file written before the time window was kept as sums, whose entries then hold the
   * samples of both windows.
   */
  constructor(limits: WindowLimits, restored: readonly WindowEntry[] = [], now?: number, restoredBuckets?: readonly TimeBucket[]) {
    if (!(limits.lastN >= 1) || !(limits.lastMs > 0)) throw new RangeError('window sizes must be positive');
    this.limits = limits;
    this.bucketMs = Math.ceil(limits.lastMs / TIME_WINDOW_BUCKETS);
    if (restoredBuckets === undefined) {
      for (const entry of restored) this.add(entry.mention, entry.at);
    } else {
      for (const entry of restored) this.addToCount(entry);
      for (const bucket of restoredBuckets) {
        const acc = new MetricsAccumulator();
        acc.applySums(bucket.sums, 1);
        this.timeAcc.applySums(bucket.sums, 1);
        this.buckets.push({ start: bucket.start, acc });
      }
    }
    if (now !== undefined) this.advance(now);
  }

  add(mention: ScoredMention, at: number): void {
    this.addToCount({ at, mention });
    const start = Math.floor(at / this.bucketMs) * this.bucketMs;
    let bucket = this.buckets.at(-1);
    // A sample older than the newest bucket (a clock stepping back) joins that bucket rather than reorder the list.
    if (!bucket || start > bucket.start) {
      bucket = { start, acc: new MetricsAccumulator() };
      this.buckets.push(bucket);
    }
    bucket.acc.add(mention);
    this.timeAcc.add(mention);
    this.advance(at);
  }

  /** Moves the time window to `now`: drops the buckets all older than T. */
  advance(now: number): void {
    const cutoff = now - this.limits.lastMs;
    while (this.buckets.length > 0 && this.buckets[0]!.start + this.bucketMs <= cutoff) {
      this.timeAcc.applySums(this.buckets.shift()!.acc.sums(), -1);
    }
  }

  reports(): WindowReports {
    return {
      count: { ...this.countAcc.report(), limit: this.limits.lastN },
      time: { ...this.timeAcc.report(), limitMs: this.limits.lastMs },
    };
  }

  /** Overall summaries only: cheap enough to re-judge alerts on every sample. */
  overall(): { count: MetricSummary; time: MetricSummary } {
    return { count: this.countAcc.overall(), time: this.timeAcc.overall() };
  }

  /** The count window's entries, oldest first: what a restart needs of it. */
  retained(): WindowEntry[] {
    return this.entries.slice(this.countStart);
  }

  /** The time window's buckets, oldest first: what a restart needs of it. */
  timeBuckets(): TimeBucket[] {
    return this.buckets.map((bucket) => ({ start: bucket.start, sums: bucket.acc.sums() }));
  }

  private addToCount(entry: WindowEntry): void {
    this.entries.push(entry);
    this.countAcc.add(entry.mention);
    while (this.entries.length - this.countStart > this.limits.lastN) {
      this.countAcc.remove(this.entries[this.countStart]!.mention);
      this.countStart++;
    }
    // Compact lazily so a steady stream does not shift the array on every sample.
    if (this.countStart > 1024 && this.countStart * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.countStart);
      this.countStart = 0;
    }
  }
}
