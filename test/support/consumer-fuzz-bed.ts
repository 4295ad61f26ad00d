import type { ConsumerRunOptions, GroupMembership, InboundRecord, KafkaClient, KafkaConsumerClient } from '../../src/stream/kafka/client-types.ts';
import { toInboundRecord } from '../../src/stream/kafka/platformatic-client.ts';
import { linkedNoteToAvro, type GoldMentionRecord } from '../../src/stream/avro/index.ts';
import type { ConsumerBases } from './consumer-mutants.ts';
import { openFixtureLinker } from './fixture-linker.ts';
import { BASE_NOTES } from './note-mutants.ts';
import type { MutantRecord } from './note-mutations.ts';

/**
 * What the fuzz tests of the stage's downstream consumers share (test/unit/eval/*-record-fuzz.test.ts):
 * the base records (the fixture linker's LinkedNotes of the stage fuzz's base notes, and a gold
 * label for each of their mentions) and a consumer the test hands one record per batch to, as
 * the Kafka client hands a fetched record over.
 */

/** LinkedNotes of BASE_NOTES by the fixture linker (the stage's own output), and gold for every mention. */
export async function consumerBases(root: string): Promise<ConsumerBases> {
  const linker = await openFixtureLinker(root);
  const linked = (await linker.linkNotes([...BASE_NOTES])).map(linkedNoteToAvro);
  const gold: GoldMentionRecord[] = BASE_NOTES.flatMap((note, n) =>
    note.mentions.map((m, i) => ({
      noteId: note.noteId, mentionId: m.id, start: m.start, end: m.end, label: m.label,
      // The linker's concept where it has one (a hit), else a concept of the fixture KB (a miss).
      ids: [linked[n]!.mentions[i]!.conceptId ?? 'MESH:D006973'], annotator: 'fuzz', annotatedAt: 1_700_000_000_000,
    })),
  );
  return { linked, gold };
}

export const MEMBERSHIP: GroupMembership = { groupId: 'g', memberId: 'm', generationId: 1 };

/** A Kafka client whose consumer keeps the run options it is given: the test calls eachBatch itself. */
export function scriptedKafka(): { kafka: KafkaClient; run: () => ConsumerRunOptions } {
  let options: ConsumerRunOptions | undefined;
  const consumer: Partial<KafkaConsumerClient> = {
    run: async (o) => void (options = o),
    commit: async () => {},
    stop: async () => {},
    close: async () => {},
    onJoin: () => {},
    onCrash: () => {},
  };
  const kafka = { clientId: 'fuzz', consumer: () => consumer as KafkaConsumerClient } as unknown as KafkaClient;
  return { kafka, run: () => options ?? (() => { throw new Error('the consumer was not started'); })() };
}

/** `record` as the Kafka client hands it over at `offset` of `topic`/0 (src/stream/kafka/platformatic-client.ts). */
export function inbound(topic: string, record: Pick<MutantRecord, 'value' | 'headers' | 'key'>, offset: number): InboundRecord {
  const headers = new Map(record.headers.map(([name, value]) => [Buffer.from(name), value === null ? null : Buffer.from(value)]));
  return toInboundRecord({ topic, partition: 0, offset: BigInt(offset), timestamp: 1_700_000_000_000n, key: record.key === undefined ? Buffer.from(`key-${offset}`) : record.key, value: record.value, headers } as never);
}

/** Hands `message` to the consumer's eachBatch as a batch of its own. */
export function deliverOne(run: ConsumerRunOptions, message: InboundRecord): Promise<void> {
  return run.eachBatch({ topic: message.topic, partition: message.partition, messages: [message], membership: MEMBERSHIP, highWatermark: undefined, isStale: () => false });
}
