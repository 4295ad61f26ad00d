import type { KafkaClient } from '../stream/kafka/client-types.ts';
import type { RecordCodec } from '../stream/avro/record-codec.ts';
import { mentionKey } from './gold.ts';
import { readTopicToEnd } from './topic-to-end.ts';

/**
 * Every mention on a review topic (ReviewMention) or label-request topic (LabelRequest), as
 * mentionKey(noteId, mentionId), read to the end it had when called: so a gold sampler can answer
 * exactly what the stage asked annotators for.
 */
export async function readRequestedMentions(client: KafkaClient, codec: RecordCodec, topic: string, kind: 'ReviewMention' | 'LabelRequest', timeoutMs = 60_000): Promise<Set<string>> {
  const keys = new Set<string>();
  await readTopicToEnd(client, topic, 'cuilink-request-reader', async (record) => {
    const decoded = await codec.decode(kind, record.value, record.headers);
    keys.add(mentionKey(decoded.noteId, decoded.mentionId));
  }, timeoutMs);
  return keys;
}

export function readReviewedMentions(client: KafkaClient, codec: RecordCodec, topic: string, timeoutMs = 60_000): Promise<Set<string>> {
  return readRequestedMentions(client, codec, topic, 'ReviewMention', timeoutMs);
}
