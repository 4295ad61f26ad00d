/** What a DeadLetterBreaker counts: an input record that came out (`ok`) or was dead-lettered (`dead`). */
export type RecordOutcome = 'ok' | 'dead';

export interface DeadLetterBreakerOptions {
  /** How many of the latest records the share is taken over (the window). */
  windowRecords: number;
  /** The breaker opens when more than this share (0–1) of the window was dead-lettered. */
  maxShare: number;
  /**
   * Records the window must hold before a share over `maxShare` opens the breaker (default
   * `windowRecords`). Before that it opens only once the dead ones alone are more than
   * `maxShare × windowRecords`: the share of the full window will be over `maxShare` whatever follows.
   */
  minRecords?: number;
}

export interface DeadLetterBreakerState {
  open: boolean;
  /** Records in the window (at most `windowRecords`). */
  records: number;
  /** Dead-lettered records in the window. */
  dead: number;
  /** dead / records (0 for an empty window). */
  share: number;
}

export type DeadLetterBreakerListener = (open: boolean, state: DeadLetterBreakerState) => void;

/**
 * A dead-letter-rate circuit breaker (issue #27): when more than `maxShare` of the last
 * `windowRecords` input records were dead-lettered, something other than the records is wrong (a
 * wrong schema registry, an upstream producer gone bad, a bug that looks like bad input), and
 * going on would drain the stream into the dead-letter topic. The breaker then opens: the stage
 * pauses, reports itself unready, raises `cuilink_stream_dead_letter_breaker_open` and commits
 * nothing. It closes again only when the share in the window falls under `maxShare` (records
 * keep being counted while it is open: those of other partitions already in flight), and the
 * stage then resumes its input; `reset()` empties the window (a restarted stage starts empty).
 * The stage counts through recordOnce(): a record read again after a hand-back counts once.
 *
 * Pure bookkeeping: no timers, no I/O. O(1) per record.
 */
export class DeadLetterBreaker {
  readonly windowRecords: number;
  readonly maxShare: number;
  readonly minRecords: number;
  /** The window as a ring: 1 = dead, 0 = ok. */
  private readonly ring: Uint8Array;
  private next = 0;
  private count = 0;
  private deadCount = 0;
  private isOpen = false;
  /** Per input partition (`topic:partition`), the highest offset counted by recordOnce(). */
  private readonly countedThrough = new Map<string, bigint>();
  private readonly listeners: DeadLetterBreakerListener[] = [];

  constructor(options: DeadLetterBreakerOptions) {
    const { windowRecords, maxShare } = options;
    if (!Number.isInteger(windowRecords) || windowRecords < 1) throw new RangeError(`windowRecords must be a positive integer, got ${windowRecords}`);
    if (!(maxShare >= 0 && maxShare < 1)) throw new RangeError(`maxShare must be in [0, 1), got ${maxShare}`);
    const minRecords = options.minRecords ?? windowRecords;
    if (!Number.isInteger(minRecords) || minRecords < 1 || minRecords > windowRecords) throw new RangeError(`minRecords must be an integer in [1, windowRecords], got ${minRecords}`);
    this.windowRecords = windowRecords;
    this.maxShare = maxShare;
    this.minRecords = minRecords;
    this.ring = new Uint8Array(windowRecords);
  }

  /** Counts one input record's outcome; may open or close the breaker (listeners are told). */
  record(outcome: RecordOutcome): void {
    const dead = outcome === 'dead' ? 1 : 0;
    if (this.count === this.windowRecords) this.deadCount -= this.ring[this.next]!;
    else this.count++;
    this.ring[this.next] = dead;
    this.deadCount += dead;
    this.next = (this.next + 1) % this.windowRecords;
    if (!this.isOpen && this.overThreshold()) this.set(true);
    else if (this.isOpen && this.share < this.maxShare) this.set(false);
  }

  /**
   * Counts the outcome of the input record at `source` unless it was counted already. A batch
   * handed back (a retriable fault, or this breaker open) is read again from its committed
   * offset: counted on every read, its dead letters would raise the share, and could open the
   * breaker, on records that were never that many. A partition's records are read in offset
   * order, so the highest offset counted tells which were.
   */
  recordOnce(source: { topic: string; partition: number; offset: string }, outcome: RecordOutcome): void {
    const partition = `${source.topic}:${source.partition}`;
    const offset = BigInt(source.offset);
    const counted = this.countedThrough.get(partition);
    if (counted !== undefined && offset <= counted) return;
    this.countedThrough.set(partition, offset);
    this.record(outcome);
  }

  /** True while too many records were dead-lettered: commit nothing, be unready. */
  get open(): boolean {
    return this.isOpen;
  }

  get state(): DeadLetterBreakerState {
    return { open: this.isOpen, records: this.count, dead: this.deadCount, share: this.share };
  }

  /** Empties the window and closes the breaker. */
  reset(): void {
    this.ring.fill(0);
    this.next = 0;
    this.count = 0;
    this.deadCount = 0;
    this.countedThrough.clear();
    if (this.isOpen) this.set(false);
  }

  /** `listener(open, state)` on every change of `open`; returns a function that removes it. */
  onChange(listener: DeadLetterBreakerListener): () => void {
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  private get share(): number {
    return this.count === 0 ? 0 : this.deadCount / this.count;
  }

  private overThreshold(): boolean {
    if (this.deadCount > this.maxShare * this.windowRecords) return true;
    return this.count >= this.minRecords && this.share > this.maxShare;
  }

  private set(open: boolean): void {
    this.isOpen = open;
    const state = this.state;
    for (const listener of [...this.listeners]) listener(open, state);
  }
}

/** The stage config's `deadLetterBreaker` section (src/stream/stage-config.ts). */
export interface DeadLetterBreakerConfig {
  enabled: boolean;
  windowRecords: number;
  maxShare: number;
  minRecords?: number;
}

/** The breaker a stage config asks for, or undefined when it is turned off. */
export function deadLetterBreakerOf(config: DeadLetterBreakerConfig): DeadLetterBreaker | undefined {
  if (!config.enabled) return undefined;
  return new DeadLetterBreaker({ windowRecords: config.windowRecords, maxShare: config.maxShare, minRecords: config.minRecords });
}
