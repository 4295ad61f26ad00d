import { CuilinkError } from '../kb/errors.ts';
import type { InboundRecord, KafkaClient } from '../stream/kafka/client-types.ts';

/**
 * How long the consumer must have handed over nothing (once fetching) before a partition one offset
 * short of its end counts as read: see caughtUp below.
 */
const IDLE_MS = 2000;
const CHECK_EVERY_MS = 100;

export interface ReadTopicOptions {
  /** A read to the end fails when it has not got there within this (default 60 s). */
  timeoutMs?: number;
  /**
   * A read to the end fails when the consumer handed over nothing for this long (default: no such
   * limit): a large topic may take long as a whole, a stuck read should not.
   */
  stallMs?: number;
  /** Only these partitions: the others are neither handed over nor waited for (default every one). */
  partitions?: readonly number[];
  /** Where a partition starts (default its log start; one below it starts there too). */
  startOffsets?: ReadonlyMap<number, bigint>;
  /** Read on past the end the topic had when called, until `signal` aborts. */
  follow?: boolean;
  /** Ends the read (it resolves) when aborted: a caller that has seen enough, or was told to stop. */
  signal?: AbortSignal;
  /** Only committed transactions' records (default true). */
  readCommitted?: boolean;
  /** Told when the consumer failed and starts again (a broker outage): the read goes on. */
  onRestart?: (error: unknown) => void;
}

/**
 * Reads a topic from the beginning up to the end offsets it had when called (a throwaway consumer
 * group, nothing committed, only committed transactions), handing each record to `onRecord`: what
 * a tool that answers a stage's requests (review, label requests) needs, and then it stops.
 * Records written after the call (at or past those end offsets) are not handed over.
 * `onRecord` throwing ends the read with that error.
 */
export function readTopicToEnd(client: KafkaClient, topic: string, groupPrefix: string, onRecord: (record: InboundRecord) => Promise<void>, timeoutMs = 60_000): Promise<void> {
  return readTopic(client, topic, groupPrefix, onRecord, { timeoutMs });
}

/**
 * readTopicToEnd with a choice of partitions and start offsets, and with `follow` a read that goes
 * on past the end until `signal` aborts (`cuilink topics read`). Each record is handed over once, in
 * offset order within its partition: a consumer that restarts after a failure reads again from
 * where it started, and what was handed over before is skipped. A consumer that gives up for good
 * ends the read with its error.
 */
export async function readTopic(client: KafkaClient, topic: string, groupPrefix: string, onRecord: (record: InboundRecord) => Promise<void>, options: ReadTopicOptions = {}): Promise<void> {
  const { timeoutMs = 60_000, follow = false, signal } = options;
  if (signal?.aborted) return;
  const admin = client.admin();
  let offsets;
  try {
    offsets = await admin.topicOffsets(topic);
  } finally {
    await admin.close();
  }
  const chosen = options.partitions === undefined ? undefined : new Set(options.partitions);
  const selected = offsets.filter((p) => chosen === undefined || chosen.has(p.partition));
  const ends = new Map(selected.map((p) => [p.partition, BigInt(p.high)]));
  // A partition starts at its log start: records retention deleted are never delivered.
  const reached = new Map(selected.map((p) => [p.partition, maxOf(BigInt(p.low), options.startOffsets?.get(p.partition) ?? 0n)]));
  // Read committed, a transaction's commit (or abort) marker takes an offset but is never delivered
  // as a record, nor is an aborted transaction's record, so a topic a transactional producer writes
  // may end past its last record (and the high watermark read above does not say what lies below
  // it). So a partition is read when its next offset reached its end, or when the consumer's
  // settled fetch position did (it moved past markers and aborted records, and nothing of the
  // partition waits to be handed over), or, for a consumer that cannot tell its position, once it
  // has handed over nothing for IDLE_MS since it started fetching and only the end's last offset
  // is missing (a trailing marker). Such a consumer's tail of aborted records is not guessed at: it
  // ends in the timeout error, as a consumer that never catches up does.
  const caughtUp = (idle: boolean) => !follow && [...ends].every(([p, end]) => reached.get(p)! >= end - (idle ? 1n : 0n));
  if (!follow && [...ends].every(([p, end]) => reached.get(p)! >= end)) return;
  // Seeking only when asked, so that every other reader starts as it always did (a new group: the log start).
  const seeks = chosen !== undefined || options.startOffsets !== undefined;
  const startOffsets = seeks ? offsets.map((p) => ({ topic, partition: p.partition, offset: String(reached.get(p.partition) ?? BigInt(p.high)) })) : undefined;
  const consumer = client.consumer({ groupId: `${groupPrefix}-${process.pid}-${Date.now()}`, readCommitted: options.readCommitted ?? true });
  const settled = () =>
    !follow &&
    [...ends].every(([p, end]) => {
      const position = consumer.settledPosition?.(topic, p);
      return reached.get(p)! >= end || (position !== undefined && BigInt(position) >= end);
    });
  let idleCheck: NodeJS.Timeout | undefined;
  const onAbort = () => done();
  let done!: () => void;
  try {
    const finished = new Promise<void>((resolve) => (done = resolve));
    signal?.addEventListener('abort', onAbort, { once: true });
    let failure: unknown;
    const fail = (error: unknown) => {
      failure ??= error ?? new Error(`${topic}: the consumer failed`);
      done();
    };
    let inFlight = 0;
    let lastActivity = Date.now();
    let lastRecord = Date.now();
    // A (re)join, e.g. after the consumer restarted, starts the idle period over.
    consumer.onJoin(() => {
      lastActivity = Date.now();
    });
    consumer.onCrash((error, restarting) => {
      if (!restarting) fail(error);
      else options.onRestart?.(error);
    });
    await consumer.run({
      topics: [topic],
      fromBeginning: true,
      ...(startOffsets === undefined ? {} : { startOffsets }),
      eachBatch: async (batch) => {
        inFlight++;
        try {
          const from = reached.get(batch.partition);
          const end = ends.get(batch.partition);
          for (const record of batch.messages) {
            // Never thrown out of here: the consumer would read the partition again from the start.
            if (failure !== undefined || signal?.aborted || from === undefined || (!follow && BigInt(record.offset) >= end!)) return;
            // Handed over before the consumer restarted.
            if (BigInt(record.offset) < reached.get(batch.partition)!) continue;
            try {
              await onRecord(record);
            } catch (error) {
              fail(error);
              return;
            }
            lastRecord = Date.now();
            reached.set(batch.partition, BigInt(record.offset) + 1n);
            if (caughtUp(false)) done();
          }
        } finally {
          inFlight--;
          lastActivity = Date.now();
        }
      },
    });
    // run() resolves once fetching started (after the join): the idle period counts from there.
    lastActivity = Date.now();
    lastRecord = Date.now();
    let stalled = false;
    idleCheck = setInterval(() => {
      if (inFlight > 0) return;
      const idle = Date.now() - lastActivity >= IDLE_MS;
      if (settled() || (idle && caughtUp(true))) done();
      else if (!follow && options.stallMs !== undefined && Date.now() - lastRecord >= options.stallMs) {
        stalled = true;
        done();
      }
    }, CHECK_EVERY_MS);
    idleCheck.unref();
    // setTimeout takes Infinity for 1 ms.
    const timer = follow || !Number.isFinite(timeoutMs) ? new Promise<never>(() => {}) : new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref());
    if ((await Promise.race([finished, timer])) === 'timeout') throw new Error(`${topic}: not read to its end within ${timeoutMs} ms`);
    if (failure !== undefined) throw failure;
    if (stalled && !signal?.aborted) throw new CuilinkError('TOPIC_READ_STALLED', `${topic}: not read to its end: nothing was read for ${options.stallMs} ms`, { retriable: true });
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (idleCheck) clearInterval(idleCheck);
    await consumer.close();
  }
}

function maxOf(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
