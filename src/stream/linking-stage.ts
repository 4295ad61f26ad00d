import { setTimeout as sleep } from 'node:timers/promises';
import { metrics as otelMetrics, trace, type Meter, type Tracer } from '@opentelemetry/api';
import type { LinkingCore } from '../link/types.ts';
import type { Logger } from '../telemetry/logger.ts';
import { StageMetrics, type StageCounts } from '../telemetry/stage-metrics.ts';
import { createKafkaClient } from './kafka-client.ts';
import type { KafkaClient, KafkaConsumerClient, KafkaProducerClient } from './kafka/client-types.ts';
import { isFencedCode, isProducerFencedCode } from './kafka/kafka-errors.ts';
import { MentionBatcher, type BatcherStats } from './mention-batcher.ts';
import { NoteBatchLinker, codeOf, type NoteOutcome, type QueuedNote } from './note-batch-linker.ts';
import { OutputDelivery } from './output-delivery.ts';
import { PartitionBatchHandler, type LabelRouting } from './partition-batch-handler.ts';
import { LabelSelector } from './label-selection/label-selector.ts';
import { normalizeName } from '../text/normalize.ts';
import type { StageCodec } from './stage-codec.ts';
import { connectionOf, stageTopicsOf, type StageConfig } from './stage-config.ts';
import { StageProgress } from './stage-progress.ts';
import { OutputFitter } from './output-fitter.ts';
import { TopicSizeLimits } from './topic-size-limits.ts';
import { deadLetterBreakerOf, type DeadLetterBreaker } from './dead-letter-breaker.ts';
import { LinkerHealthProbe, linkerCheck } from './linker-health-probe.ts';
import { requireTopics } from './topics.ts';

/** @platformatic/kafka's default rebalance timeout; the stage raises it to the session timeout when that is longer. */
const CLIENT_REBALANCE_TIMEOUT_MS = 102_000;

export interface LinkingStageOptions {
  config: StageConfig;
  linker: LinkingCore;
  codec: StageCodec;
  logger: Logger;
  /** Brokers to use; `config.brokers` when absent (the run command passes the local broker's). */
  brokers?: string[];
  tracer?: Tracer;
  meter?: Meter;
}

export interface StageStats {
  counts: StageCounts;
  batcher: BatcherStats;
  inFlightMentions: number;
}

/**
 * The Kafka stage: a consumer group on the input topic, the micro-batcher in front of the shared
 * LinkingCore, and the output/dead-letter producer. Delivery is at-least-once (commit after the
 * output is acknowledged) or exactly-once (transactions, read_committed). stop() stops fetching,
 * drains what is in flight, commits and disconnects within the drain timeout.
 */
export class LinkingStage {
  readonly metrics: StageMetrics;
  private readonly options: LinkingStageOptions;
  private readonly kafka: KafkaClient;
  private readonly consumer: KafkaConsumerClient;
  /** How long the broker may stay silent (no heartbeat, no fetch) before the stage calls itself unready. */
  private readonly brokerSilenceMs: number;
  private readonly delivery: OutputDelivery;
  private readonly batcher: MentionBatcher<QueuedNote, NoteOutcome>;
  private readonly logger: Logger;
  private readonly handle: PartitionBatchHandler['handle'];
  private readonly flushDueLabels: PartitionBatchHandler['flushDueLabels'];
  /** Sends a closed label window on an idle stream (docs/active-learning.md). */
  private labelTimer: NodeJS.Timeout | undefined;
  private readonly noteLinker: NoteBatchLinker;
  private readonly breaker: DeadLetterBreaker | undefined;
  /** Probes the linker on a timer, so an encoder that gave up shows on an idle stream too. */
  private readonly probe: LinkerHealthProbe;
  readonly progress = new StageProgress();
  /** The output and dead-letter topics' record size limits, read at start. */
  readonly sizes = new TopicSizeLimits();
  /** eachBatch calls in progress: stop() waits for them before it closes the consumer. */
  private readonly activeBatches = new Set<Promise<void>>();
  private joined = false;
  /** The consumer is running (start() got that far): stop() drains only then. */
  private running = false;
  private stopping = false;
  private failed = false;
  private failedWith: unknown;
  private stopPromise: Promise<boolean> | undefined;
  private joinWaiters: (() => void)[] = [];
  private fatalListeners: ((error: unknown) => void)[] = [];

  constructor(options: LinkingStageOptions) {
    this.options = options;
    const { config, logger } = options;
    this.logger = logger;
    const kafkaLog = logger.child({ component: 'kafka' });
    this.kafka = createKafkaClient(connectionOf(config, options.brokers ?? config.brokers), (entry) => {
      const write = entry.level === 'error' ? kafkaLog.error : entry.level === 'warn' ? kafkaLog.warn : entry.level === 'debug' ? kafkaLog.debug : kafkaLog.info;
      write(entry.message, { namespace: entry.namespace, ...entry.extra });
    });
    const exactlyOnce = config.delivery === 'exactly-once';
    this.consumer = this.kafka.consumer({
      groupId: config.groupId,
      sessionTimeoutMs: config.consumer.sessionTimeoutMs,
      heartbeatIntervalMs: config.consumer.heartbeatIntervalMs,
      // The client's rebalance timeout (102 s) must not be under the session timeout, which the broker allows up to 30 minutes.
      rebalanceTimeoutMs: Math.max(CLIENT_REBALANCE_TIMEOUT_MS, config.consumer.sessionTimeoutMs),
      maxBytesPerPartition: config.consumer.maxBytesPerPartition,
      readCommitted: true,
    });
    this.brokerSilenceMs = Math.max(10_000, 3 * config.consumer.heartbeatIntervalMs);
    // The transactional id must be the same for an instance across its restarts (a StatefulSet
    // pod name, or config), so that a restarted instance fences the stalled one it replaces.
    const createProducer = (): KafkaProducerClient =>
      this.kafka.producer(exactlyOnce ? { transactionalId: config.transactionalId ?? `${config.groupId}-${config.clientId}`, transactionTimeoutMs: config.transactionTimeoutMs } : {});
    const retry = { maxAttempts: config.retry.maxAttempts, initialBackoffMs: config.retry.initialBackoffMs, maxBackoffMs: config.retry.maxBackoffMs };
    const tracer = options.tracer ?? trace.getTracer('cuilink.stream');
    this.metrics = new StageMetrics(() => this.batcher.inFlightMentions, options.meter ?? otelMetrics.getMeter('cuilink.stream'));
    const noteLinker = new NoteBatchLinker(options.linker, tracer, this.metrics, retry, logger);
    this.noteLinker = noteLinker;
    // The linker is broken for good (its encoder could not be restarted): nothing more can be
    // linked, so stop without committing what it could not link and let a supervisor restart us.
    noteLinker.onFatal((error) => this.fail('linker failed', error));
    this.batcher = new MentionBatcher<QueuedNote, NoteOutcome>(config.batching, (q) => q.mentionCount, (items) => noteLinker.link(items));
    this.breaker = deadLetterBreakerOf(config.deadLetterBreaker);
    this.breaker?.onChange((open, state) => {
      this.metrics.recordDeadLetterBreaker(open);
      if (open) {
        this.consumer.pause();
        logger.error('dead-letter breaker open: input paused, nothing more is produced or committed until the dead-letter share falls under maxShare or the stage is restarted', { share: state.share, window: state.records, dead: state.dead });
        return;
      }
      // Other partitions' records still count while the input is paused and can bring the share
      // back under maxShare; the input must then be read again, or the stage would report itself
      // ready while consuming nothing. A drain keeps it paused; high pressure resumes it later.
      const action = inputOnPressure(this.batcher.underPressure, { stopping: this.stopping, breakerOpen: false });
      if (action === 'resume') this.consumer.resume();
      logger.warn(action === 'resume' ? 'dead-letter breaker closed: input resumed' : 'dead-letter breaker closed: input stays paused (draining, or in-flight mentions at the limit)', { share: state.share, window: state.records, dead: state.dead });
    });
    this.probe = new LinkerHealthProbe({ check: linkerCheck(options.linker), logger, intervalMs: config.health.probeIntervalMs });
    this.probe.onChange((healthy, error) => {
      if (!healthy) this.fail('linker health probe failed', error);
    });
    this.batcher.onPressure((high) => {
      const action = inputOnPressure(high, { stopping: this.stopping, breakerOpen: this.breaker?.open === true });
      if (action === 'leave') return;
      if (action === 'pause') this.consumer.pause();
      else this.consumer.resume();
      logger.debug(high ? 'in-flight mentions at the limit: consumer paused' : 'consumer resumed', { inFlightMentions: this.batcher.inFlightMentions });
    });
    this.delivery = new OutputDelivery(createProducer, this.consumer, config, this.sizes, retry);
    const handler = new PartitionBatchHandler({
      config, codec: options.codec, batcher: this.batcher, delivery: this.delivery,
      sizes: this.sizes, fitter: new OutputFitter(options.codec, this.sizes),
      metrics: this.metrics, tracer, logger, retry, progress: this.progress, isStopping: () => this.stopping,
      labels: labelRoutingOf(config, options.linker),
      ...(this.breaker ? { breaker: this.breaker } : {}),
    });
    this.handle = (payload) => handler.handle(payload);
    this.flushDueLabels = () => handler.flushDueLabels();
  }

  /** Connects, checks the topics exist, joins the group and starts consuming; `signal` aborted gives up before the consumer runs. */
  async start(signal?: AbortSignal): Promise<void> {
    const { config } = this.options;
    await requireTopics(this.kafka, stageTopicsOf(config));
    const { output, deadLetter, review, labelRequests, measureRequests } = config.topics;
    const sideTopics = [review, labelRequests, measureRequests].filter((t) => t !== undefined);
    await this.sizes.load(this.kafka, [output, deadLetter], config.topics.maxMessageBytes, this.logger, sideTopics);
    this.metrics.highWatermarkOf = (topic, partition) => this.consumer.highWatermark?.(topic, partition);
    this.consumer.onJoin((join) => {
      this.joined = true;
      this.metrics.retainPartitions(join.assignment);
      this.logger.info('joined consumer group', { groupId: config.groupId, memberId: join.memberId, generationId: join.generationId, assignment: join.assignment });
      for (const wake of this.joinWaiters.splice(0)) wake();
    });
    this.consumer.onCrash((error, restarting) => {
      // Not ready until the consumer fetches again (broker unreachable, batch handed back).
      this.joined = false;
      this.logger.error('consumer failed', { code: codeOf(error), error, restarting });
      if (!restarting) this.fail('consumer failed', error);
    });
    await this.delivery.connect();
    // Each step above can wait on the broker for its request timeout; a stop asked meanwhile must not join the group.
    signal?.throwIfAborted();
    await this.consumer.run({
      topics: [config.topics.input],
      fromBeginning: config.consumer.fromBeginning,
      partitionsConcurrently: config.consumer.partitionsConsumedConcurrently,
      eachBatch: async (batch) => {
        const handling = this.handle(batch);
        const tracked = handling.catch(() => {});
        this.activeBatches.add(tracked);
        try {
          await handling;
        } catch (error) {
          const code = codeOf(error);
          // Another instance took our transactional id: this one is the zombie and must write nothing more.
          if (isProducerFencedCode(code)) this.fail('fenced by another instance with the same transactional id', error);
          else if (code === 'TRANSACTION_STUCK') this.fail('transaction stuck', error);
          else if (isFencedCode(code)) this.logger.warn('partition moved to another member before its records were committed; they will be read again by their owner', { topic: batch.topic, partition: batch.partition, code });
          else this.logger.warn('partition batch handed back to Kafka', { topic: batch.topic, partition: batch.partition, code });
          throw error;
        } finally {
          this.activeBatches.delete(tracked);
        }
      },
    });
    this.running = true;
    this.probe.start();
    if (config.topics.labelRequests !== undefined || config.topics.measureRequests !== undefined) {
      // A window that closes while no batch comes goes out within 10 s of closing.
      this.labelTimer = setInterval(() => void this.flushDueLabels(), Math.min(config.labels.windowMs, 10_000));
      this.labelTimer.unref();
    }
    this.logger.info('stage started', { delivery: config.delivery, input: config.topics.input, output: config.topics.output, deadLetter: config.topics.deadLetter });
  }

  /**
   * Ready while the stage can make progress: the consumer has joined its group (and has not
   * crashed since), the linker's last attempt succeeded, and no partition is stuck retrying.
   */
  get ready(): boolean {
    return this.joined && !this.stopping && !this.failed && this.brokerAnswering && this.noteLinker.available && this.probe.healthy && this.breaker?.open !== true && this.progress.progressing;
  }

  /** The broker answered a heartbeat or a fetch within brokerSilenceMs: /readyz goes 503 within that time of an outage. */
  get brokerAnswering(): boolean {
    return Date.now() - this.consumer.lastBrokerContactAt() < this.brokerSilenceMs;
  }

  private fail(what: string, error: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.failedWith = error;
    this.logger.error(`${what}: stopping without committing what is not done`, { error });
    for (const listener of this.fatalListeners) listener(error);
  }

  get live(): boolean {
    return !this.failed;
  }

  whenJoined(): Promise<void> {
    return this.joined ? Promise.resolve() : new Promise((resolve) => this.joinWaiters.push(resolve));
  }

  /**
   * Called when the consumer gave up (crash without restart): the process should exit non-zero.
   * A listener added after the failure hears of it at once (the demo subscribes only once its samples are linked).
   */
  onFatal(listener: (error: unknown) => void): void {
    if (this.failed) queueMicrotask(() => listener(this.failedWith));
    else this.fatalListeners.push(listener);
  }

  stats(): StageStats {
    return { counts: this.metrics.counts, batcher: this.batcher.stats, inFlightMentions: this.batcher.inFlightMentions };
  }

  /**
   * Stops fetching, drains in-flight batches, commits and disconnects. Resolves `true` when that
   * finished within the drain timeout, `false` when it was cut short (uncommitted records are
   * consumed again by the next owner). Idempotent.
   */
  stop(): Promise<boolean> {
    this.stopPromise ??= (async () => {
      this.stopping = true;
      this.probe.stop();
      if (this.labelTimer) clearInterval(this.labelTimer);
      const { config } = this.options;
      const { drainTimeoutMs } = config;
      if (!this.running) {
        // start() failed or never ran: nothing was taken, so there is nothing to drain.
        await this.consumer.close().catch(() => {});
        await this.delivery.disconnect().catch(() => {});
        return true;
      }
      this.logger.info('stopping: draining in-flight batches', { inFlightMentions: this.batcher.inFlightMentions, drainTimeoutMs });
      const drain = (async (): Promise<'drained' | 'failed'> => {
        try {
          // Handlers see `stopping`, take no new records, and finish (produce + commit) those already taken.
          this.consumer.pause();
          while (this.activeBatches.size > 0) await Promise.all([...this.activeBatches]);
          await this.consumer.stop();
          await this.batcher.shutdown();
          await this.consumer.close();
          await this.delivery.disconnect();
          return 'drained';
        } catch (error) {
          this.logger.error('drain failed; uncommitted records will be consumed again', { error });
          return 'failed';
        }
      })();
      const timeout = sleep(drainTimeoutMs, 'timeout' as const, { ref: false });
      const outcome = await Promise.race([drain, timeout]);
      if (outcome === 'timeout') this.logger.warn('drain timeout reached; uncommitted records will be consumed again', { drainTimeoutMs });
      else if (outcome === 'drained') this.logger.info('stopped', { ...this.metrics.counts });
      const drained = outcome === 'drained';
      return drained;
    })();
    return this.stopPromise;
  }
}

/**
 * What the batcher's backpressure does to the input topic: pause it at the limit, resume it when
 * in-flight mentions fall to half, except that a drain (stopping) or an open dead-letter breaker
 * has paused the input for good, and pressure falling must not resume it then ('leave').
 */
export function inputOnPressure(high: boolean, state: { stopping: boolean; breakerOpen: boolean }): 'pause' | 'resume' | 'leave' {
  if (state.stopping || state.breakerOpen) return 'leave';
  return high ? 'pause' : 'resume';
}

/** The label selector when a label-request topic is configured (docs/active-learning.md). */
function labelRoutingOf(config: StageConfig, linker: LinkingCore): LabelRouting | undefined {
  const { labelRequests: learnTopic, measureRequests: measureTopic } = config.topics;
  if (learnTopic === undefined && measureTopic === undefined) return undefined;
  const selector = new LabelSelector({
    ...config.labels,
    // Without a learn topic nothing is chosen by need; the measure slice is still asked.
    budget: learnTopic === undefined ? 0 : config.labels.budget,
    surfaceKey: normalizeName,
    inMemory: linker.knowsSurface === undefined ? undefined : (text) => linker.knowsSurface!(text),
  });
  return { selector, learnTopic, measureTopic };
}
