import type { KafkaClient, OutboundRecord } from '../../stream/kafka/client-types.ts';
import type { RecordCodec } from '../../stream/avro/record-codec.ts';
import { goldMentionToAvro } from '../gold-avro.ts';
import type { AcceptedLabel } from './annotation-judge.ts';

/**
 * Publishes imported concept gold to the gold topic as GoldMention records keyed by note id (as
 * `cuilink gold-sample` does: same partitioner, idempotent producer, all replicas acknowledge),
 * with the annotator and annotation time. NIL answers are not given: see gold-line.ts.
 */
export async function publishAnnotatedGold(client: KafkaClient, codec: RecordCodec, topic: string, labels: readonly AcceptedLabel[], batchSize = 500): Promise<number> {
  const producer = client.producer();
  await producer.connect();
  let published = 0;
  try {
    for (let i = 0; i < labels.length; i += batchSize) {
      const messages: OutboundRecord[] = [];
      for (const label of labels.slice(i, i + batchSize)) {
        if (label.nil) continue;
        const encoded = await codec.encode('GoldMention', goldMentionToAvro(label.gold, { annotator: label.annotator, annotatedAt: label.annotatedAt }), topic);
        messages.push({ key: label.gold.noteId, value: encoded.value, headers: encoded.headers });
      }
      if (messages.length > 0) await producer.send([{ topic, messages }]);
      published += messages.length;
    }
  } finally {
    await producer.close();
  }
  return published;
}
