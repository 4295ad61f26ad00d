import { setTimeout as sleep } from 'node:timers/promises';
import { kGetApi, kGetConnection, kMetadata, type Consumer, type Message, type MessagesStream } from '@platformatic/kafka';
import type { ConsumerJoin, ConsumerOptions, ConsumerRunOptions, GroupMembership, InboundRecord, InputCommit, KafkaConsumerClient } from './client-types.ts';
import { asKafkaError, kafkaCall } from './kafka-errors.ts';
import { CuilinkError } from '../../kb/errors.ts';
import { closeConsumer, membershipOf, toInboundRecord } from './platformatic-client.ts';
import { requireStableOffsets } from './stable-offsets.ts';

export type LibraryConsumer = Consumer;

interface PartitionQueue {
  topic: string;
  partition: number;
  records: InboundRecord[];
  membership: GroupMembership | undefined;
  running: boolean;
}

/**
 * One fetch stream's life. It ends (goes stale) on a rebalance, on a batch that failed, or on
 * stop; the next one starts from the committed offsets (or the run's startOffsets). Ending a whole epoch rather than seeking
 * one partition keeps the rule simple: after any doubt, read again from what is committed.
 */
class Epoch {
  stale = false;
  generationId: number | undefined;
  buffered = 0;
  pausedByUs = false;
  readonly queues = new Map<string, PartitionQueue>();
  readonly running = new Set<Promise<void>>();
  constructor(readonly stream: MessagesStream<Buffer, Buffer, Buffer, Buffer>) {}
}

const MAX_RECORDS_PER_BATCH = 1000;
const DEFAULT_MAX_BUFFERED = 2000;
const HIGH_WATERMARK_REFRESH_MS = 5000;

/** The wait before reading again after the n-th hand-back in a row (n ≥ 2): 0.5 s doubling to 10 s, the cap of a failed restart's backoff. */
export function handBackDelayMs(handBacks: number): number {
  return Math.min(10_000, 250 * 2 ** Math.min(handBacks - 1, 6));
}

/**
 * Our KafkaConsumerClient on the library's record stream: records are queued per partition and
 * handed to `eachBatch` one partition batch at a time (never two at once for a partition, up to
 * `partitionsConcurrently` partitions at once). Fetching pauses while `maxBufferedRecords` wait.
 * Commits carry the membership the records were read under (KIP-447), so a member that stalled
 * past a rebalance has them refused.
 */
export class PartitionBatchConsumer implements KafkaConsumerClient {
  private consumer: LibraryConsumer | undefined;
  private runOptions: ConsumerRunOptions | undefined;
  private epoch: Epoch | undefined;
  private paused = false;
  private active = 0;
  private stopping = false;
  private stopPromise: Promise<void> | undefined;
  private closePromise: Promise<void> | undefined;
  private restarting: Promise<void> | undefined;
  /** Per partition, its batches handed back since one of its batches last completed: the next restart waits the longer. */
  private readonly handBacks = new Map<string, number>();
  /** Cuts a hand-back's wait short when the consumer stops. */
  private readonly stopped = new AbortController();
  private lastContact = 0;
  private readonly highWatermarks = new Map<string, string>();
  private watermarkTimer: NodeJS.Timeout | undefined;
  private readonly joinListeners: ((join: ConsumerJoin) => void)[] = [];
  private readonly crashListeners: ((error: unknown, restarting: boolean) => void)[] = [];

  constructor(
    private readonly create: () => LibraryConsumer,
    private readonly options: ConsumerOptions,
  ) {}

  async run(options: ConsumerRunOptions): Promise<void> {
    if (this.runOptions !== undefined) throw new Error('consumer already running');
    this.runOptions = options;
    // Every epoch starts from the committed offsets: only stable ones, never those from before a transaction that is still finishing.
    const consumer = requireStableOffsets(this.create());
    this.consumer = consumer;
    consumer.on('consumer:group:join', (payload) => {
      this.lastContact = Date.now();
      const join: ConsumerJoin = { memberId: payload.memberId, generationId: payload.generationId ?? consumer.generationId, assignment: (payload.assignments ?? consumer.assignments ?? []).map((a) => ({ topic: a.topic, partitions: [...a.partitions] })) };
      for (const listener of this.joinListeners) listener(join);
      const epoch = this.epoch;
      if (epoch !== undefined && epoch.generationId !== undefined && join.generationId !== epoch.generationId) this.restart(epoch, undefined);
    });
    consumer.on('consumer:heartbeat:end', () => (this.lastContact = Date.now()));
    await this.startEpoch();
    this.watermarkTimer = setInterval(() => void this.refreshHighWatermarks(), HIGH_WATERMARK_REFRESH_MS);
    this.watermarkTimer.unref();
    void this.refreshHighWatermarks();
  }

  /** When the broker last answered this consumer (a heartbeat, a join or a fetch); 0 before the first. */
  lastBrokerContactAt(): number {
    return this.lastContact;
  }

  async commit(commits: InputCommit[]): Promise<void> {
    const consumer = this.consumer;
    if (consumer === undefined || commits.length === 0) return;
    for (const c of commits) {
      // The library would rejoin and commit under the new generation; a commit read under an older one must be refused instead.
      if (c.membership.generationId !== consumer.generationId || c.membership.memberId !== consumer.memberId) {
        throw new CuilinkError('KAFKA_ILLEGAL_GENERATION', `commit offsets: records of ${c.topic}/${c.partition} were read under generation ${c.membership.generationId}; the group is at ${consumer.generationId}`);
      }
    }
    await kafkaCall('commit offsets', () => commitAsRead(consumer, commits));
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    if (this.epoch) this.dispatch(this.epoch);
  }

  highWatermark(topic: string, partition: number): string | undefined {
    return this.highWatermarks.get(`${topic}:${partition}`);
  }

  settledPosition(topic: string, partition: number): string | undefined {
    const epoch = this.epoch;
    // Paused by us, records may wait in the stream's buffer; readableLength counts those of a push not yet emitted.
    if (epoch === undefined || epoch.stale || epoch.pausedByUs || epoch.stream.readableLength > 0) return undefined;
    const key = `${topic}:${partition}`;
    const queue = epoch.queues.get(key);
    if (queue !== undefined && (queue.running || queue.records.length > 0)) return undefined;
    // The library moves it past the last batch of each fetch, control and aborted batches included.
    const next = epoch.stream.offsetsToFetch.get(key);
    return next === undefined ? undefined : String(next);
  }

  onJoin(listener: (join: ConsumerJoin) => void): void {
    this.joinListeners.push(listener);
  }

  onCrash(listener: (error: unknown, restarting: boolean) => void): void {
    this.crashListeners.push(listener);
  }

  stop(): Promise<void> {
    this.stopPromise ??= (async () => {
      this.stopping = true;
      this.stopped.abort();
      if (this.watermarkTimer) clearInterval(this.watermarkTimer);
      const epoch = this.epoch;
      if (epoch !== undefined) await this.endEpoch(epoch);
      await this.restarting?.catch(() => {});
      // A restart whose consume() was answered meanwhile started an epoch not seen above: its stream would go on fetching.
      const started = this.epoch;
      if (started !== undefined && started !== epoch) await this.endEpoch(started);
    })();
    return this.stopPromise;
  }

  /** Ends `epoch` for good: no more batches from it, its running ones finished, its stream closed. */
  private async endEpoch(epoch: Epoch): Promise<void> {
    epoch.stale = true;
    epoch.queues.clear();
    await Promise.allSettled([...epoch.running]);
    await epoch.stream.close().catch(() => {});
  }

  close(): Promise<void> {
    this.closePromise ??= (async () => {
      await this.stop();
      await closeConsumer(this.consumer);
    })();
    return this.closePromise;
  }

  private async startEpoch(): Promise<void> {
    const consumer = this.consumer!;
    const { topics, fromBeginning, startOffsets } = this.runOptions!;
    const fallbackMode = fromBeginning ? 'earliest' : 'latest';
    const start = startOffsets === undefined || startOffsets.length === 0 ? { mode: 'committed' as const } : { mode: 'manual' as const, offsets: startOffsets.map((s) => ({ topic: s.topic, partition: s.partition, offset: BigInt(s.offset) })) };
    const stream = await kafkaCall('consume', () => consumer.consume({ topics, ...start, fallbackMode, autocommit: false, maxWaitTime: 500 }));
    const epoch = new Epoch(stream);
    this.epoch = epoch;
    // consume() resolving is no answer from the broker (it can resolve from the library's group
    // state: a restart during an outage did, and kept /readyz 200 with the broker down); a record is.
    stream.on('data', (message: Message) => {
      this.lastContact = Date.now();
      this.accept(epoch, message);
    });
    // The library emits 'fetch' after a failed fetch or metadata request too, then destroys the
    // stream in the same tick: only a fetch the stream survived is an answer.
    stream.on('fetch', () => {
      const at = Date.now();
      queueMicrotask(() => {
        if (!stream.destroyed) this.lastContact = Math.max(this.lastContact, at);
      });
    });
    stream.on('error', (error: unknown) => this.restart(epoch, asKafkaError(error, 'fetch')));
  }

  private accept(epoch: Epoch, message: Message): void {
    if (epoch.stale) return;
    const membership = membershipOf(message);
    epoch.generationId ??= membership.generationId;
    if (membership.generationId !== epoch.generationId) {
      this.restart(epoch, undefined);
      return;
    }
    const key = `${message.topic}:${message.partition}`;
    let queue = epoch.queues.get(key);
    if (queue === undefined) {
      queue = { topic: message.topic, partition: message.partition, records: [], membership, running: false };
      epoch.queues.set(key, queue);
    }
    queue.records.push(toInboundRecord(message));
    queue.membership = membership;
    epoch.buffered++;
    if (epoch.buffered >= (this.options.maxBufferedRecords ?? DEFAULT_MAX_BUFFERED) && !epoch.pausedByUs) {
      epoch.pausedByUs = true;
      epoch.stream.pause();
    }
    this.dispatch(epoch);
  }

  private dispatch(epoch: Epoch): void {
    const concurrency = this.runOptions?.partitionsConcurrently ?? 1;
    for (const queue of epoch.queues.values()) {
      if (this.paused || epoch.stale || this.active >= concurrency) return;
      if (queue.running || queue.records.length === 0) continue;
      const records = queue.records.splice(0, MAX_RECORDS_PER_BATCH);
      queue.running = true;
      this.active++;
      const run = this.runBatch(epoch, queue, records);
      epoch.running.add(run);
      void run.finally(() => epoch.running.delete(run));
    }
  }

  private async runBatch(epoch: Epoch, queue: PartitionQueue, records: InboundRecord[]): Promise<void> {
    try {
      await this.runOptions!.eachBatch({
        topic: queue.topic,
        partition: queue.partition,
        messages: records,
        membership: queue.membership!,
        highWatermark: this.highWatermarks.get(`${queue.topic}:${queue.partition}`),
        isStale: () => epoch.stale || this.stopping,
      });
      this.handBacks.delete(`${queue.topic}:${queue.partition}`);
    } catch (error) {
      // Handed back: read again from the committed offsets (this batch's uncommitted records included).
      if (!epoch.stale) this.restart(epoch, error, `${queue.topic}:${queue.partition}`);
    } finally {
      queue.running = false;
      this.active--;
      epoch.buffered -= records.length;
      if (epoch.pausedByUs && !epoch.stale && epoch.buffered < (this.options.maxBufferedRecords ?? DEFAULT_MAX_BUFFERED) / 2) {
        epoch.pausedByUs = false;
        epoch.stream.resume();
      }
      if (!epoch.stale) this.dispatch(epoch);
    }
  }

  /**
   * Ends `epoch` (rebalance when `error` is undefined) and starts the next from the committed
   * offsets; `handedBack` names the partition whose batch failed.
   */
  private restart(epoch: Epoch, error: unknown, handedBack?: string): void {
    if (epoch !== this.epoch || epoch.stale || this.stopping) return;
    epoch.stale = true;
    epoch.queues.clear();
    if (error !== undefined) for (const listener of this.crashListeners) listener(error, true);
    const handBacks = handedBack === undefined ? 0 : (this.handBacks.get(handedBack) ?? 0) + 1;
    if (handedBack !== undefined) this.handBacks.set(handedBack, handBacks);
    this.restarting = (async () => {
      await Promise.allSettled([...epoch.running]);
      await epoch.stream.close().catch(() => {});
      // A batch handed back again and again (a fault that outlives the retries: a refused output
      // topic, a registry that says no) is read again after a growing wait, not in a tight loop.
      if (handBacks > 1) await sleep(handBackDelayMs(handBacks), undefined, { signal: this.stopped.signal }).catch(() => {});
      for (let attempt = 1; !this.stopping; attempt++) {
        try {
          await this.startEpoch();
          // Stopping: stop() closes the stream just opened; listeners must not hear that records flow again.
          if (this.stopping) return;
          this.announceFetching();
          return;
        } catch (startError) {
          const retriable = (startError as { retriable?: boolean }).retriable === true;
          for (const listener of this.crashListeners) listener(startError, retriable);
          if (!retriable) return;
          await sleep(Math.min(10_000, 250 * 2 ** Math.min(attempt, 6)), undefined, { signal: this.stopped.signal }).catch(() => {});
        }
      }
    })();
  }

  /** After a restart the membership may be unchanged (no join event): listeners still learn that records flow again. */
  private announceFetching(): void {
    const consumer = this.consumer!;
    const join: ConsumerJoin = { memberId: consumer.memberId ?? '', generationId: consumer.generationId, assignment: (consumer.assignments ?? []).map((a) => ({ topic: a.topic, partitions: [...a.partitions] })) };
    for (const listener of this.joinListeners) listener(join);
  }

  private async refreshHighWatermarks(): Promise<void> {
    const consumer = this.consumer;
    if (consumer === undefined || this.stopping) return;
    try {
      const offsets = await consumer.listOffsets({ topics: this.runOptions!.topics, timestamp: -1n });
      for (const [topic, partitions] of offsets) partitions.forEach((high, partition) => this.highWatermarks.set(`${topic}:${partition}`, String(high)));
    } catch {
      // Lag is a metric: an unreachable broker is reported by the fetch, not here.
    }
  }
}

type OffsetCommitApi = (connection: unknown, groupId: string, generationId: number, memberId: string, groupInstanceId: null, topics: { name: string; partitions: { partitionIndex: number; committedOffset: bigint; committedLeaderEpoch: number; committedMetadata: null }[] }[], done: (error: unknown) => void) => void;

/**
 * One OffsetCommit under the membership the records were read under (all `commits` share it: the
 * caller checked), sent to the group coordinator as it is, never rejoining. The library's own
 * commit() answers ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and REBALANCE_IN_PROGRESS by joining the
 * group again and committing the same offsets under the new generation, partitions given to
 * another member meanwhile included; here the coordinator's refusal is the answer.
 */
function commitAsRead(consumer: LibraryConsumer, commits: InputCommit[]): Promise<void> {
  const { groupId, memberId, generationId, coordinatorId } = commits[0]!.membership;
  const topics = new Map<string, { partitionIndex: number; committedOffset: bigint; committedLeaderEpoch: number; committedMetadata: null }[]>();
  for (const c of commits) {
    const partitions = topics.get(c.topic) ?? [];
    partitions.push({ partitionIndex: c.partition, committedOffset: BigInt(c.offset), committedLeaderEpoch: -1, committedMetadata: null });
    topics.set(c.topic, partitions);
  }
  return new Promise<void>((resolve, reject) => {
    const coordinator = consumer.coordinatorId ?? coordinatorId;
    if (coordinator === undefined || coordinator === null) {
      reject(new CuilinkError('KAFKA_COORDINATOR_NOT_AVAILABLE', 'commit offsets: the group coordinator is not known yet', { retriable: true }));
      return;
    }
    consumer[kMetadata]({ topics: [...topics.keys()] }, (error, metadata) => {
      const broker = metadata?.brokers.get(coordinator);
      if (error || broker === undefined) return reject(error ?? new CuilinkError('KAFKA_NOT_COORDINATOR', `commit offsets: the group coordinator (broker ${coordinator}) is not in the cluster metadata`, { retriable: true }));
      consumer[kGetConnection](broker, (error, connection) => {
        if (error) return reject(error);
        consumer[kGetApi]<Parameters<OffsetCommitApi>, unknown>('OffsetCommit', (error, api) => {
          if (error) return reject(error);
          (api as unknown as OffsetCommitApi)(connection, groupId, generationId, memberId, null, [...topics].map(([name, partitions]) => ({ name, partitions })), (error) => (error ? reject(error) : resolve()));
        });
      });
    });
  });
}
