import type { Kafka, KafkaMessage } from 'kafkajs';

/**
 * Reads a topic from the beginning up to the end offsets it had when called (a throwaway consumer
 * group, nothing committed, only committed transactions), handing each record to `onRecord`: what
 * a tool that answers a stage's requests (review, label requests) needs, and then it stops.
 * `onRecord` throwing ends the read with that error.
 */
export async function readTopicToEnd(kafka: Kafka, topic: string, groupPrefix: string, onRecord: (message: KafkaMessage, partition: number) => Promise<void>, timeoutMs = 60_000): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  let ends: Map<number, bigint>;
  try {
    ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)]));
  } finally {
    await admin.disconnect();
  }
  const reached = new Map<number, bigint>([...ends].map(([p]) => [p, 0n]));
  const caughtUp = () => [...ends].every(([p, end]) => reached.get(p)! >= end);
  if (caughtUp()) return;
  const consumer = kafka.consumer({ groupId: `${groupPrefix}-${process.pid}-${Date.now()}`, readUncommitted: false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    let failure: unknown;
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        try {
          await onRecord(message, partition);
        } catch (error) {
          failure ??= error;
          done();
        }
        reached.set(partition, BigInt(message.offset) + 1n);
        if (caughtUp()) done();
      },
    });
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref());
    if ((await Promise.race([finished, timer])) === 'timeout') throw new Error(`${topic}: not read to its end within ${timeoutMs} ms`);
    if (failure !== undefined) throw failure;
  } finally {
    await consumer.disconnect();
  }
}
