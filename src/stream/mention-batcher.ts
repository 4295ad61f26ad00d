import { CuilinkError } from '../kb/errors.ts';

export interface MentionBatcherOptions {
  /** A batch is cut once it holds this many mentions; a single heavier item goes alone. */
  maxMentions: number;
  /** ...or once its oldest item has waited this long. */
  maxWaitMs: number;
  /** Above this many queued-or-processing mentions `pressure` turns high; it turns low again at half. */
  maxInFlightMentions: number;
  /** Hard bound on queued mentions; submissions beyond it are rejected (counted). Default 2 × maxInFlightMentions. */
  maxQueuedMentions?: number;
}

export interface BatcherStats {
  submitted: number;
  batches: number;
  rejected: number;
  failedBatches: number;
  queuedMentions: number;
  processingMentions: number;
}

/** Processes one batch; must return one result per item, in order. */
export type BatchProcessor<T, R> = (items: T[]) => Promise<R[]>;

interface Pending<T, R> {
  item: T;
  weight: number;
  enqueuedAt: number;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Collects whole notes from every partition into linking batches, cut by mention count or wait
 * time, processed one batch at a time (the encoder is the bottleneck; one batch at a time keeps
 * each one's work bounded). Shaped like opentelemetry-js BatchSpanProcessorBase: a bounded queue,
 * a size and a time trigger, counted rejections, forceFlush, and an idempotent shutdown that
 * drains. Unlike a span processor it never drops silently: callers wait for `whenBelowLimit()`
 * (and pause their consumer on `pressure`) instead of overfilling it.
 */
export class MentionBatcher<T, R> {
  private readonly options: Required<MentionBatcherOptions>;
  private readonly weigh: (item: T) => number;
  private readonly process: BatchProcessor<T, R>;
  private queue: Pending<T, R>[] = [];
  private queuedMentions = 0;
  private processingMentions = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private closed = false;
  private shutdownPromise: Promise<void> | undefined;
  private timerExpired = false;
  private high = false;
  private readonly pressureListeners: ((high: boolean) => void)[] = [];
  private capacityWaiters: (() => void)[] = [];
  private readonly counters = { submitted: 0, batches: 0, rejected: 0, failedBatches: 0 };

  constructor(options: MentionBatcherOptions, weigh: (item: T) => number, process: BatchProcessor<T, R>) {
    if (options.maxMentions < 1 || options.maxInFlightMentions < 1 || options.maxWaitMs < 0) throw new RangeError('MentionBatcher: limits must be positive');
    this.options = { maxQueuedMentions: options.maxInFlightMentions * 2, ...options };
    this.weigh = weigh;
    this.process = process;
  }

  get inFlightMentions(): number {
    return this.queuedMentions + this.processingMentions;
  }

  get stats(): BatcherStats {
    return { ...this.counters, queuedMentions: this.queuedMentions, processingMentions: this.processingMentions };
  }

  /** Called with `true` when in-flight mentions reach the limit, `false` when they fall to half. */
  onPressure(listener: (high: boolean) => void): void {
    this.pressureListeners.push(listener);
  }

  /** Resolves once in-flight mentions are under the limit (at once when they are). */
  whenBelowLimit(): Promise<void> {
    if (this.inFlightMentions < this.options.maxInFlightMentions || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.capacityWaiters.push(resolve));
  }

  /** Queues an item; resolves with its result once its batch is processed. */
  submit(item: T): Promise<R> {
    const weight = Math.max(0, this.weigh(item));
    if (this.closed) {
      this.counters.rejected++;
      return Promise.reject(new CuilinkError('BATCHER_CLOSED', 'the mention batcher is shut down', { retriable: true }));
    }
    if (this.queuedMentions > 0 && this.queuedMentions + weight > this.options.maxQueuedMentions) {
      this.counters.rejected++;
      return Promise.reject(new CuilinkError('BATCHER_FULL', `the mention batcher queue is full (${this.queuedMentions} mentions)`, { retriable: true }));
    }
    this.counters.submitted++;
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, weight, enqueuedAt: performance.now(), resolve, reject });
      this.queuedMentions += weight;
      this.updatePressure();
      if (this.queuedMentions >= this.options.maxMentions) this.kick();
      else this.armTimer();
    });
  }

  /** Processes everything queued now, regardless of size and wait limits. */
  async forceFlush(): Promise<void> {
    while (this.queue.length > 0 || this.running) {
      this.clearTimer();
      this.kick(true);
      await this.running;
    }
  }

  /** Stops accepting, processes what is queued, waits for it. Safe to call more than once. */
  shutdown(): Promise<void> {
    this.shutdownPromise ??= (async () => {
      this.closed = true;
      this.releaseWaiters();
      await this.forceFlush();
    })();
    return this.shutdownPromise;
  }

  private kick(force = false): void {
    if (this.running || this.queue.length === 0) return;
    if (!force && this.queuedMentions < this.options.maxMentions && !this.timerExpired) return;
    this.running = this.drainLoop(force).finally(() => {
      this.running = undefined;
      if (this.queue.length > 0) {
        if (this.queuedMentions >= this.options.maxMentions || this.closed) this.kick(this.closed);
        else this.armTimer();
      }
    });
  }

  /** Fires when the oldest queued item has waited maxWaitMs (at once if it already has). */
  private armTimer(): void {
    if (this.timer || this.running || this.queue.length === 0) return;
    this.timerExpired = false;
    const delay = Math.max(0, this.queue[0]!.enqueuedAt + this.options.maxWaitMs - performance.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerExpired = true;
      this.kick();
    }, delay);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Runs batches while a full one is queued (or, when forced or timed out, while anything is). */
  private async drainLoop(force: boolean): Promise<void> {
    let flushAll = force || this.timerExpired;
    this.clearTimer();
    this.timerExpired = false;
    while (this.queue.length > 0 && (flushAll || this.queuedMentions >= this.options.maxMentions)) {
      const batch = this.cut();
      await this.runBatch(batch);
      flushAll = force || this.closed;
    }
  }

  private cut(): Pending<T, R>[] {
    let mentions = 0;
    let take = 0;
    while (take < this.queue.length) {
      const weight = this.queue[take]!.weight;
      if (take > 0 && mentions + weight > this.options.maxMentions) break;
      mentions += weight;
      take++;
    }
    const batch = this.queue.splice(0, take);
    this.queuedMentions -= mentions;
    this.processingMentions += mentions;
    return batch;
  }

  private async runBatch(batch: Pending<T, R>[]): Promise<void> {
    const mentions = batch.reduce((sum, p) => sum + p.weight, 0);
    this.counters.batches++;
    try {
      const results = await this.process(batch.map((p) => p.item));
      if (results.length !== batch.length) throw new Error(`batch processor returned ${results.length} results for ${batch.length} items`);
      batch.forEach((p, i) => p.resolve(results[i]!));
    } catch (error) {
      this.counters.failedBatches++;
      for (const p of batch) p.reject(error);
    } finally {
      this.processingMentions -= mentions;
      this.updatePressure();
      if (this.inFlightMentions < this.options.maxInFlightMentions) this.releaseWaiters();
    }
  }

  private updatePressure(): void {
    const inFlight = this.inFlightMentions;
    if (!this.high && inFlight >= this.options.maxInFlightMentions) this.setPressure(true);
    else if (this.high && inFlight <= this.options.maxInFlightMentions / 2) this.setPressure(false);
  }

  private setPressure(high: boolean): void {
    this.high = high;
    for (const listener of this.pressureListeners) listener(high);
  }

  private releaseWaiters(): void {
    const waiters = this.capacityWaiters;
    this.capacityWaiters = [];
    for (const wake of waiters) wake();
  }
}
