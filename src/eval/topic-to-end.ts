import type { InboundRecord, KafkaClient } from '../stream/kafka/client-types.ts';

/**
 * How long the consumer must have handed over nothing (once fetching) before a partition one offset
 * short of its end counts as read: see caughtUp below.
 */
const IDLE_MS = 2000;
const CHECK_EVERY_MS = 100;

/**
 * Reads a topic from the beginning up to the end offsets it had when called (a throwaway consumer
 * group, nothing committed, only committed transactions), handing each record to `onRecord`: what
 * a tool that answers a stage's requests (review, label requests) needs, and then it stops.
 * Records written after the call (at or past those end offsets) are not handed over.
 * `onRecord` throwing ends the read with that error.
 */
export async function readTopicToEnd(client: KafkaClient, topic: string, groupPrefix: string, onRecord: (record: InboundRecord) => Promise<void>, timeoutMs = 60_000): Promise<void> {
  const admin = client.admin();
  let offsets;
  try {
    offsets = await admin.topicOffsets(topic);
  } finally {
    await admin.close();
  }
  const ends = new Map(offsets.map((p) => [p.partition, BigInt(p.high)]));
  // A partition starts at its log start: records retention deleted are never delivered.
  const reached = new Map(offsets.map((p) => [p.partition, BigInt(p.low)]));
  // Read committed, a transaction's commit (or abort) marker takes an offset but is never delivered
  // as a record, nor is an aborted transaction's record, so a topic a transactional producer writes
  // may end past its last record (and the high watermark read above does not say what lies below
  // it). So a partition is read when its next offset reached its end, or when the consumer's
  // settled fetch position did (it moved past markers and aborted records, and nothing of the
  // partition waits to be handed over), or, for a consumer that cannot tell its position, once it
  // has handed over nothing for IDLE_MS since it started fetching and only the end's last offset
  // is missing (a trailing marker). Such a consumer's tail of aborted records is not guessed at: it
  // ends in the timeout error, as a consumer that never catches up does.
  const caughtUp = (idle: boolean) => [...ends].every(([p, end]) => reached.get(p)! >= end - (idle ? 1n : 0n));
  if (caughtUp(false)) return;
  const consumer = client.consumer({ groupId: `${groupPrefix}-${process.pid}-${Date.now()}`, readCommitted: true });
  const settled = () =>
    [...ends].every(([p, end]) => {
      const position = consumer.settledPosition?.(topic, p);
      return reached.get(p)! >= end || (position !== undefined && BigInt(position) >= end);
    });
  let idleCheck: NodeJS.Timeout | undefined;
  try {
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    let failure: unknown;
    let inFlight = 0;
    let lastActivity = Date.now();
    // A (re)join, e.g. after the consumer restarted, starts the idle period over.
    consumer.onJoin(() => {
      lastActivity = Date.now();
    });
    await consumer.run({
      topics: [topic],
      fromBeginning: true,
      eachBatch: async (batch) => {
        inFlight++;
        try {
          const end = ends.get(batch.partition);
          for (const record of batch.messages) {
            // Never thrown out of here: the consumer would read the partition again from the start.
            if (failure !== undefined || end === undefined || BigInt(record.offset) >= end) return;
            try {
              await onRecord(record);
            } catch (error) {
              failure ??= error;
              done();
              return;
            }
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
    idleCheck = setInterval(() => {
      if (inFlight > 0) return;
      const idle = Date.now() - lastActivity >= IDLE_MS;
      if (settled() || (idle && caughtUp(true))) done();
    }, CHECK_EVERY_MS);
    idleCheck.unref();
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref());
    if ((await Promise.race([finished, timer])) === 'timeout') throw new Error(`${topic}: not read to its end within ${timeoutMs} ms`);
    if (failure !== undefined) throw failure;
  } finally {
    if (idleCheck) clearInterval(idleCheck);
    await consumer.close();
  }
}
