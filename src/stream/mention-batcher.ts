import { CuilinkError } from '../kb/errors.ts';

export interface MentionBatcherOptions {
  /** A batch holds at most this many mentions; a single heavier item goes alone. */
  maxMentions: number;
  /**
   * How long an idle linker waits for a partial batch to fill (0: it links what is there on the
   * next event-loop turn). While a batch is being linked, new items wait for it instead.
   */
  maxWaitMs: number;
  /** Above this many queued-or-processing mentions `pressure` turns high; it turns low again at half. */
  maxInFlightMentions: number;
  /** Hard bound on queued mentions; submissions beyond it are rejected (counted). Default 2 × maxInFlightMentions. */
  maxQueuedMentions?: number;
  /**
   * Batches linked at once (default 1). Two let one batch's CPU work on the main thread (tokenizing,
   * retrieval) overlap the other's inference in the encoder worker, and let a note that arrives
   * during a batch start beside it instead of behind it.
   */
  maxConcurrentBatches?: number;
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
 * Collects whole notes from every partition into linking batches, linked `maxConcurrentBatches` at
 * a time (the encoder is the bottleneck; a bounded number of batches keeps the work behind each
 * one bounded). Batching is Nagle-style: an idle linker starts on what is queued at once (after
 * `maxWaitMs`, 0 by default), so a lone note at a low rate is not held back waiting for company;
 * while every slot is linking, arrivals queue and the first batch to finish takes up to
 * `maxMentions` of them at once — batches grow with the backlog, and shrink again when it drains.
 * Shaped like
 * opentelemetry-js BatchSpanProcessorBase: a bounded queue, counted rejections, forceFlush, and an
 * idempotent shutdown that drains. Unlike a span processor it never drops silently: callers wait
 * for `whenBelowLimit()` (and pause their consumer on `pressure`) instead of overfilling it.
 */
export class MentionBatcher<T, R> {
  private readonly options: Required<MentionBatcherOptions>;
  private readonly weigh: (item: T) => number;
  private readonly process: BatchProcessor<T, R>;
  private queue: Pending<T, R>[] = [];
  private queuedMentions = 0;
  private processingMentions = 0;
  /** Cancels the scheduled start of an idle linker's next batch. */
  private cancelStart: (() => void) | undefined;
  private readonly running = new Set<Promise<void>>();
  private closed = false;
  private shutdownPromise: Promise<void> | undefined;
  private high = false;
  private readonly pressureListeners: ((high: boolean) => void)[] = [];
  private capacityWaiters: (() => void)[] = [];
  private readonly counters = { submitted: 0, batches: 0, rejected: 0, failedBatches: 0 };

  constructor(options: MentionBatcherOptions, weigh: (item: T) => number, process: BatchProcessor<T, R>) {
    if (options.maxMentions < 1 || options.maxInFlightMentions < 1 || options.maxWaitMs < 0 || (options.maxConcurrentBatches ?? 1) < 1) throw new RangeError('MentionBatcher: limits must be positive');
    this.options = { maxQueuedMentions: options.maxInFlightMentions * 2, maxConcurrentBatches: 1, ...options };
    this.weigh = weigh;
    this.process = process;
  }

  get inFlightMentions(): number {
    return this.queuedMentions + this.processingMentions;
  }

  get stats(): BatcherStats {
    return { ...this.counters, queuedMentions: this.queuedMentions, processingMentions: this.processingMentions };
  }

  /** In-flight mentions reached the limit and have not yet fallen to half (what the last `onPressure` call said). */
  get underPressure(): boolean {
    return this.high;
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
      this.scheduleStart();
    });
  }

  /** Processes everything queued now, without waiting for `maxWaitMs`; resolves when nothing is queued or linking. */
  async forceFlush(): Promise<void> {
    while (this.queue.length > 0 || this.running.size > 0) {
      this.startNow();
      await Promise.all(this.running);
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

  /**
   * An idle linker starts at once on a full batch, else on the next event-loop turn (so that
   * records submitted together — one fetch's worth — share a batch) or after `maxWaitMs` from the
   * oldest item. With every batch slot busy nothing is scheduled: the first batch to finish takes
   * what queued meanwhile. A free slot beside a running batch starts on the next turn, no linger.
   */
  private scheduleStart(): void {
    if (this.queue.length === 0 || this.running.size >= this.options.maxConcurrentBatches) return;
    // Before the pending-start check: a batch that fills while a partial one lingers must not wait out its timer.
    if (this.queuedMentions >= this.options.maxMentions) return this.startNow();
    if (this.cancelStart) return;
    const delay = this.running.size > 0 ? 0 : this.queue[0]!.enqueuedAt + this.options.maxWaitMs - performance.now();
    if (delay <= 0) {
      const handle = setImmediate(() => this.startNow());
      this.cancelStart = () => clearImmediate(handle);
    } else {
      const handle = setTimeout(() => this.startNow(), delay);
      this.cancelStart = () => clearTimeout(handle);
    }
  }

  /** Fills the free batch slots from the queue; each finished batch refills its slot with what queued meanwhile. */
  private startNow(): void {
    this.cancelStart?.();
    this.cancelStart = undefined;
    while (this.queue.length > 0 && this.running.size < this.options.maxConcurrentBatches) {
      const batch: Promise<void> = this.runBatch(this.cut()).finally(() => {
        this.running.delete(batch);
        if (this.queue.length > 0) this.startNow();
      });
      this.running.add(batch);
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
