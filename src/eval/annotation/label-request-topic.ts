import type { Kafka } from 'kafkajs';
import type { RecordCodec } from '../../stream/avro/record-codec.ts';
import type { RequestBatch } from './label-request-file.ts';
import { parseLabelRequest } from './label-request-line.ts';
import { readTopicToEnd } from '../topic-to-end.ts';

/**
 * Every LabelRequest on a topic, read from the beginning up to the end offsets it had when called
 * (as src/eval/review-reader.ts reads the review topic: a throwaway consumer group, nothing
 * committed), so an export is the requests made so far and then stops. A record that does not
 * decode is refused with its partition and offset; the rest are kept.
 */
export async function readLabelRequestTopic(kafka: Kafka, codec: RecordCodec, topic: string, timeoutMs = 60_000): Promise<RequestBatch> {
  const batch: RequestBatch = { requests: [], refused: [] };
  await readTopicToEnd(kafka, topic, 'cuilink-annotate-export', async (message, partition) => {
    const where = `${topic} partition ${partition} offset ${message.offset}`;
    try {
      const parsed = parseLabelRequest(await codec.decode('LabelRequest', message.value, message.headers as never));
      if ('reason' in parsed) batch.refused.push({ where, reason: parsed.reason });
      else batch.requests.push({ request: parsed.request, where });
    } catch (error) {
      batch.refused.push({ where, reason: `not a LabelRequest record: ${(error as Error).message}` });
    }
  }, timeoutMs);
  return batch;
}
