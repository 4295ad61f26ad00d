import { CuilinkError } from '../kb/errors.ts';
import type { KafkaClient } from '../stream/kafka/client-types.ts';
import type { RecordCodec } from '../stream/avro/record-codec.ts';
import { mentionKey } from './gold.ts';
import { readTopicToEnd } from './topic-to-end.ts';

/** What a read of a review or label-request topic found. */
export interface RequestedMentions {
  /** Every mention asked about, as mentionKey(noteId, mentionId). */
  mentions: Set<string>;
  /** Records that do not decode, by place and error code (no content: a record may hold anything). */
  refused: { where: string; code: string }[];
}

/**
 * Every mention on a review topic (ReviewMention) or label-request topic (LabelRequest), read to
 * the end it had when called: so a gold sampler can answer exactly what the stage asked
 * annotators for. Anyone may write to such a topic: a record that does not decode is refused and
 * the read goes on (the other records still say what the stage asked). A retriable failure (the
 * schema registry unreachable) fails the read: it says nothing of the record.
 */
export async function readRequestedMentions(client: KafkaClient, codec: RecordCodec, topic: string, kind: 'ReviewMention' | 'LabelRequest', timeoutMs = 60_000): Promise<RequestedMentions> {
  const read: RequestedMentions = { mentions: new Set(), refused: [] };
  await readTopicToEnd(client, topic, 'cuilink-request-reader', async (record) => {
    try {
      const decoded = await codec.decode(kind, record.value, record.headers);
      read.mentions.add(mentionKey(decoded.noteId, decoded.mentionId));
    } catch (error) {
      if (!(error instanceof CuilinkError) || error.retriable) throw error;
      read.refused.push({ where: `${topic} partition ${record.partition} offset ${record.offset}`, code: error.code });
    }
  }, timeoutMs);
  return read;
}
