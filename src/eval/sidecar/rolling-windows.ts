import type { ScoredMention } from '../metrics/mention-record.ts';
import type { MetricSummary } from '../metrics/metric-sums.ts';
import { MetricsAccumulator, type MetricsReport } from '../metrics/metrics-accumulator.ts';

export interface WindowLimits {
  /** The count window holds the last N joined gold samples. */
  lastN: number;
  /** The time window holds samples joined in the last T milliseconds. */
  lastMs: number;
}

export interface WindowEntry {
  /** When the sample was joined (epoch ms). */
  at: number;
  mention: ScoredMention;
}

export interface WindowReports {
  count: MetricsReport & { limit: number };
  time: MetricsReport & { limitMs: number };
}

/**
 * The two rolling windows over joined samples. Both are suffixes of one arrival-ordered list:
 * the count window its last N entries, the time window its entries younger than T. Each has its
 * own accumulator that entries are added to on arrival and removed from as they fall out, so a
 * report costs nothing and equals a batch over the window (metrics-accumulator.ts). The list
 * keeps only what is still in either window, and is what a snapshot persists.
 */
export class RollingWindows {
  private readonly limits: WindowLimits;
  private entries: WindowEntry[] = [];
  // Absolute positions in `entries` (shifted when the list is compacted).
  private countStart = 0;
  private timeStart = 0;
  private readonly countAcc = new MetricsAccumulator();
  private readonly timeAcc = new MetricsAccumulator();

  constructor(limits: WindowLimits, restored: readonly WindowEntry[] = [], now?: number) {
    if (!(limits.lastN >= 1) || !(limits.lastMs > 0)) throw new RangeError('window sizes must be positive');
    this.limits = limits;
    for (const entry of restored) this.add(entry.mention, entry.at);
    if (now !== undefined) this.advance(now);
  }

  add(mention: ScoredMention, at: number): void {
    this.entries.push({ at, mention });
    this.countAcc.add(mention);
    this.timeAcc.add(mention);
    while (this.entries.length - this.countStart > this.limits.lastN) {
      this.countAcc.remove(this.entries[this.countStart]!.mention);
      this.countStart++;
    }
    this.advance(at);
  }

  /** Moves the time window to `now`, then forgets entries neither window holds. */
  advance(now: number): void {
    const cutoff = now - this.limits.lastMs;
    while (this.timeStart < this.entries.length && this.entries[this.timeStart]!.at < cutoff) {
      this.timeAcc.remove(this.entries[this.timeStart]!.mention);
      this.timeStart++;
    }
    const head = Math.min(this.countStart, this.timeStart);
    // Compact lazily so a steady stream does not shift the array on every sample.
    if (head > 1024 && head * 2 > this.entries.length) {
      this.entries = this.entries.slice(head);
      this.countStart -= head;
      this.timeStart -= head;
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

  /** Entries still in either window, oldest first: what a restart needs. */
  retained(): WindowEntry[] {
    return this.entries.slice(Math.min(this.countStart, this.timeStart));
  }
}
