import type { Kafka } from 'kafkajs';
import type { RecordCodec } from '../../stream/avro/record-codec.ts';
import type { RequestBatch } from './label-request-file.ts';
import { parseLabelRequest } from './label-request-line.ts';

/**
 * Every LabelRequest on a topic, read from the beginning up to the end offsets it had when called
 * (as src/eval/review-reader.ts reads the review topic: a throwaway consumer group, nothing
 * committed), so an export is the requests made so far and then stops. A record that does not
 * decode is refused with its partition and offset; the rest are kept.
 */
export async function readLabelRequestTopic(kafka: Kafka, codec: RecordCodec, topic: string, timeoutMs = 60_000): Promise<RequestBatch> {
  const admin = kafka.admin();
  await admin.connect();
  let ends: Map<number, bigint>;
  try {
    ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)]));
  } finally {
    await admin.disconnect();
  }
  const batch: RequestBatch = { requests: [], refused: [] };
  const reached = new Map<number, bigint>([...ends].map(([p]) => [p, 0n]));
  const caughtUp = () => [...ends].every(([p, end]) => reached.get(p)! >= end);
  if (caughtUp()) return batch;
  const consumer = kafka.consumer({ groupId: `cuilink-annotate-export-${process.pid}-${Date.now()}`, readUncommitted: false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const where = `${topic} partition ${partition} offset ${message.offset}`;
        try {
          const parsed = parseLabelRequest(await codec.decode('LabelRequest', message.value, message.headers as never));
          if ('reason' in parsed) batch.refused.push({ where, reason: parsed.reason });
          else batch.requests.push({ request: parsed.request, where });
        } catch (error) {
          batch.refused.push({ where, reason: `not a LabelRequest record: ${(error as Error).message}` });
        }
        reached.set(partition, BigInt(message.offset) + 1n);
        if (caughtUp()) done();
      },
    });
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), timeoutMs).unref());
    if ((await Promise.race([finished, timer])) === 'timeout') throw new Error(`${topic}: not read to its end within ${timeoutMs} ms`);
  } finally {
    await consumer.disconnect();
  }
  return batch;
}
