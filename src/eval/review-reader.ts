import type { Kafka } from 'kafkajs';
import type { RecordCodec } from '../stream/avro/record-codec.ts';
import { mentionKey } from './gold.ts';
import { readTopicToEnd } from './topic-to-end.ts';

/**
 * Every mention on a review topic (ReviewMention) or label-request topic (LabelRequest), as
 * mentionKey(noteId, mentionId), read to the end it had when called: so a gold sampler can answer
 * exactly what the stage asked annotators for.
 */
export async function readRequestedMentions(kafka: Kafka, codec: RecordCodec, topic: string, kind: 'ReviewMention' | 'LabelRequest', timeoutMs = 60_000): Promise<Set<string>> {
  const keys = new Set<string>();
  await readTopicToEnd(kafka, topic, 'cuilink-request-reader', async (message) => {
    const record = await codec.decode(kind, message.value, message.headers as never);
    keys.add(mentionKey(record.noteId, record.mentionId));
  }, timeoutMs);
  return keys;
}

export function readReviewedMentions(kafka: Kafka, codec: RecordCodec, topic: string, timeoutMs = 60_000): Promise<Set<string>> {
  return readRequestedMentions(kafka, codec, topic, 'ReviewMention', timeoutMs);
}
