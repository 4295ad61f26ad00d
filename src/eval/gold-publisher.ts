import type { KafkaClient, OutboundRecord, TopicRecords } from '../stream/kafka/client-types.ts';
import { noteInputToNoteEvent } from '../stream/avro/avro-conversions.ts';
import type { RecordCodec } from '../stream/avro/record-codec.ts';
import { documentToNote, mentionKey, refuseOversizedGoldLabels } from './gold.ts';
import { goldMentionToAvro } from './gold-avro.ts';
import { inGoldSample } from './gold-sampling.ts';
import { emptyPubTatorStats, readPubTator, type PubTatorStats } from './pubtator.ts';

export interface GoldPublishOptions {
  kafka: KafkaClient;
  codec: RecordCodec;
  corpus: CheckedGoldCorpus;
  /** Share of notes whose gold is published (inGoldSample: deterministic per note id and seed). */
  fraction: number;
  /** When set, instead of the fraction: exactly the gold mentions whose mentionKey is in it (e.g. what the stage sent to review). */
  onlyMentions?: ReadonlySet<string>;
  seed: number;
  goldTopic: string;
  /** When set, every annotated note is also published here as a NoteEvent (the stream the gold samples). */
  notesTopic?: string;
  annotator?: string;
  /** Records per produce request. */
  batchSize?: number;
  now?: () => number;
}

export interface GoldPublishResult {
  notes: number;
  sampledNotes: number;
  goldPublished: number;
  notesPublished: number;
  stats: PubTatorStats;
}

/**
 * `cuilink gold-sample`: reads a PubTator corpus (the evaluation protocol of cuilink eval),
 * publishes the gold mentions of the sampled notes to the gold topic and, optionally, every
 * note to the input topic; all keyed by note id with Kafka's default (murmur2) partitioner, so
 * a note's gold and its linked output land on the same partition number when the topics are
 * partitioned alike. The producer is idempotent and waits for all replicas (client-types.ts).
 */
export async function publishGoldSample(options: GoldPublishOptions): Promise<GoldPublishResult> {
  const { file, types } = options.corpus;
  const now = options.now ?? Date.now;
  const batchSize = options.batchSize ?? 500;
  const producer = options.kafka.producer();
  await producer.connect();
  const result: GoldPublishResult = { notes: 0, sampledNotes: 0, goldPublished: 0, notesPublished: 0, stats: emptyPubTatorStats() };
  let gold: OutboundRecord[] = [];
  let notes: OutboundRecord[] = [];
  const flush = async (): Promise<void> => {
    const requests: TopicRecords[] = [];
    if (gold.length > 0) requests.push({ topic: options.goldTopic, messages: gold });
    if (notes.length > 0 && options.notesTopic !== undefined) requests.push({ topic: options.notesTopic, messages: notes });
    if (requests.length > 0) await producer.send(requests);
    result.goldPublished += gold.length;
    result.notesPublished += notes.length;
    gold = [];
    notes = [];
  };
  try {
    for await (const doc of readPubTator(file, { types, stats: result.stats })) {
      if (doc.annotations.length === 0) continue;
      result.notes++;
      const converted = documentToNote(doc);
      if (options.notesTopic !== undefined) {
        const encoded = await options.codec.encode('NoteEvent', noteInputToNoteEvent(converted.note, now()), options.notesTopic);
        notes.push({ key: doc.pmid, value: encoded.value, headers: encoded.headers });
      }
      const picked = options.onlyMentions === undefined ? (inGoldSample(doc.pmid, options.fraction, options.seed) ? converted.gold : []) : converted.gold.filter((g) => options.onlyMentions!.has(mentionKey(g.noteId, g.mentionId)));
      if (picked.length > 0) {
        result.sampledNotes++;
        for (const g of picked) {
          const encoded = await options.codec.encode('GoldMention', goldMentionToAvro(g, { annotator: options.annotator ?? null, annotatedAt: now() }), options.goldTopic);
          gold.push({ key: g.noteId, value: encoded.value, headers: encoded.headers });
        }
      }
      if (gold.length + notes.length >= batchSize) await flush();
    }
    await flush();
  } finally {
    await producer.close();
  }
  return result;
}

declare const checked: unique symbol;

/** A corpus checkGoldCorpus read whole and found fit to publish; nothing else makes one. */
export interface CheckedGoldCorpus {
  readonly file: string;
  readonly types: RegExp | undefined;
  readonly [checked]: true;
}

/**
 * Reads the corpus once, whole, before anything is published: a malformed line, or a label the
 * gold topic's readers refuse (more than MAX_GOLD_IDS ids), refuses it whichever notes a sample
 * would draw, rather than have it published in part. No broker is involved, so `cuilink
 * gold-sample` runs it before it creates or reads a topic: a refused corpus leaves the broker as
 * it was. Annotations `types` leaves out are not checked.
 */
export async function checkGoldCorpus(file: string, types: RegExp | undefined): Promise<CheckedGoldCorpus> {
  for await (const doc of readPubTator(file, { types })) refuseOversizedGoldLabels(file, doc);
  return { file, types } as CheckedGoldCorpus;
}
