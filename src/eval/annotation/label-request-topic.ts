import { CuilinkError } from '../../kb/errors.ts';
import type { KafkaClient } from '../../stream/kafka/client-types.ts';
import type { RecordCodec } from '../../stream/avro/record-codec.ts';
import type { RequestBatch } from './label-request-file.ts';
import { parseLabelRequest } from './label-request-line.ts';
import { readTopicToEnd } from '../topic-to-end.ts';

/**
 * Every LabelRequest on a topic, read from the beginning up to the end offsets it had when called
 * (as src/eval/review-reader.ts reads the review topic: a throwaway consumer group, nothing
 * committed), so an export is the requests made so far and then stops. A record that does not
 * decode is refused with its partition and offset; the rest are kept. A retriable failure (the
 * schema registry unreachable) fails the read.
 */
export async function readLabelRequestTopic(client: KafkaClient, codec: RecordCodec, topic: string, timeoutMs = 60_000): Promise<RequestBatch> {
  const batch: RequestBatch = { requests: [], refused: [] };
  await readTopicToEnd(client, topic, 'cuilink-annotate-export', async (record) => {
    const where = `${topic} partition ${record.partition} offset ${record.offset}`;
    try {
      const parsed = parseLabelRequest(await codec.decode('LabelRequest', record.value, record.headers));
      if ('reason' in parsed) batch.refused.push({ where, reason: parsed.reason });
      else batch.requests.push({ request: parsed.request, where });
    } catch (error) {
      // A registry that cannot be reached says nothing of the record: refusing it would export a
      // partial set as if the rest were bad requests. Thrown, it ends the read (readTopicToEnd).
      if (!(error instanceof CuilinkError) || error.retriable) throw error;
      batch.refused.push({ where, reason: `not a LabelRequest record: ${(error as Error).message}` });
    }
  }, timeoutMs);
  return batch;
}
