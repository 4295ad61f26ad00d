import type { Kafka } from 'kafkajs';
import type { RecordCodec } from '../stream/avro/record-codec.ts';
import { mentionKey } from './gold.ts';

/**
 * Every mention on a review topic, as mentionKey(noteId, mentionId): read from the beginning up
 * to the end offsets it had when called (a throwaway consumer group, nothing committed), so a
 * gold sampler can answer exactly what the stage asked annotators for.
 */
export async function readReviewedMentions(kafka: Kafka, codec: RecordCodec, topic: string, timeoutMs = 60_000): Promise<Set<string>> {
  const admin = kafka.admin();
  await admin.connect();
  let ends: Map<number, bigint>;
  try {
    ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)]));
  } finally {
    await admin.disconnect();
  }
  const keys = new Set<string>();
  const reached = new Map<number, bigint>([...ends].map(([p]) => [p, 0n]));
  const caughtUp = () => [...ends].every(([p, end]) => reached.get(p)! >= end);
  if (caughtUp()) return keys;
  const consumer = kafka.consumer({ groupId: `cuilink-review-reader-${process.pid}-${Date.now()}`, readUncommitted: false });
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
          const review = await codec.decode('ReviewMention', message.value, message.headers as never);
          keys.add(mentionKey(review.noteId, review.mentionId));
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
  return keys;
}
