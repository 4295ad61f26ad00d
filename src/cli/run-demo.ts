import { readFileSync } from 'node:fs';
import type { NoteInput } from '../link/types.ts';
import { avroToLinkedNote, noteInputToNoteEvent, type RecordCodec } from '../stream/avro/index.ts';
import { mentionsToReview } from '../stream/review-selection.ts';
import { InputError } from '../kb/errors.ts';
import type { StageConfig } from '../stream/stage-config.ts';
import type { InboundRecord, KafkaClient, KafkaProducerClient } from '../stream/kafka/client-types.ts';
import { isObject, parseJsonSafely } from '../kb/safe-json.ts';

export interface DemoNotes {
  notes: NoteInput[];
  /** Lines that were not JSON objects (reported, not published). */
  skipped: { line: number; reason: string }[];
}

/** Reads the sample note events (JSON lines, the `cuilink link` input shape). */
export function readDemoNotes(file: string): DemoNotes {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read samples ${file}: ${(error as Error).message}`, 'BAD_FLAGS');
  }
  const notes: NoteInput[] = [];
  const skipped: DemoNotes['skipped'] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    // Notes are PHI: the parser's own message would quote the line.
    const json = parseJsonSafely(line);
    if ('reason' in json) skipped.push({ line: i + 1, reason: json.reason });
    else if (!isObject(json.value) || typeof json.value.noteId !== 'string') skipped.push({ line: i + 1, reason: 'not a note event object with a noteId' });
    else notes.push(json.value as unknown as NoteInput);
  });
  return { notes, skipped };
}

export interface DemoResult {
  linked: Map<string, ReturnType<typeof avroToLinkedNote>>;
  deadLettered: Map<string, { errorCode: string; reason: string }>;
  firstSentAt: number;
  lastReceivedAt: number;
  /** Publish-to-receipt latency per note, ms. */
  latenciesMs: number[];
  /** `noteId/mentionId` of the mentions that came back on the review topic. */
  reviewed: Set<string>;
}

/**
 * Publishes the sample notes as NoteEvent records and reads the stage's output and dead-letter
 * topics until every note is accounted for (or the timeout passes).
 */
export async function publishAndCollect(kafka: KafkaClient, codec: RecordCodec, config: StageConfig, notes: NoteInput[], timeoutMs: number): Promise<DemoResult> {
  const result: DemoResult = { linked: new Map(), deadLettered: new Map(), firstSentAt: 0, lastReceivedAt: 0, latenciesMs: [], reviewed: new Set() };
  const reviewTopic = config.topics.review;
  const topics = [config.topics.output, config.topics.deadLetter, ...(reviewTopic === undefined ? [] : [reviewTopic])];
  const sentAt = new Map<string, number>();
  // Only what this run produces is read: records below each partition's end now are older. The
  // consumer reads from the beginning and skips those, rather than starting at the log end: it looks
  // its start offsets up only after run() resolved, so records published meanwhile would be missed.
  // The same map skips records read again after a restart (a record that failed is read again).
  const next = new Map<string, bigint>();
  const admin = kafka.admin();
  try {
    for (const topic of topics) for (const p of await admin.topicOffsets(topic)) next.set(`${topic}\u0000${p.partition}`, BigInt(p.high));
  } finally {
    await admin.close();
  }
  const consumer = kafka.consumer({ groupId: `cuilink-run-demo-${process.pid}-${Date.now()}`, readCommitted: true });
  // Every note back, and every review record its linked output implies (they are produced together but read in any order).
  const complete = () =>
    result.linked.size + result.deadLettered.size >= wanted.size &&
    (reviewTopic === undefined || [...result.linked.values()].every((note) => mentionsToReview(note, config.review.belowConfidence).every((m) => result.reviewed.has(`${note.noteId}/${m.mentionId}`))));
  const wanted = new Set(notes.map((n) => n.noteId));
  let done!: () => void;
  const allSeen = new Promise<void>((resolve) => (done = resolve));
  const onRecord = async (topic: string, message: InboundRecord): Promise<void> => {
    const now = Date.now();
    if (topic === reviewTopic) {
      const review = await codec.decode('ReviewMention', message.value, message.headers);
      if (wanted.has(review.noteId)) result.reviewed.add(`${review.noteId}/${review.mentionId}`);
    } else if (topic === config.topics.output) {
      const linked = avroToLinkedNote(await codec.decode('LinkedNote', message.value, message.headers));
      if (!wanted.has(linked.noteId)) return;
      result.linked.set(linked.noteId, linked);
      if (sentAt.has(linked.noteId)) result.latenciesMs.push(now - sentAt.get(linked.noteId)!);
    } else {
      const dead = await codec.decode('DeadLetter', message.value, message.headers);
      const noteId = message.key?.toString() ?? `${dead.sourceTopic}/${dead.partition}/${dead.offset}`;
      result.deadLettered.set(noteId, { errorCode: dead.errorCode, reason: dead.reason });
    }
    result.lastReceivedAt = now;
    if (complete()) done();
  };
  let producer: KafkaProducerClient | undefined;
  try {
    await consumer.run({
      topics,
      fromBeginning: true,
      eachBatch: async (batch) => {
        const key = `${batch.topic}\u0000${batch.partition}`;
        for (const message of batch.messages) {
          if (batch.isStale()) return;
          const offset = BigInt(message.offset);
          if (offset < (next.get(key) ?? 0n)) continue;
          await onRecord(batch.topic, message);
          next.set(key, offset + 1n);
        }
      },
    });
    producer = kafka.producer();
    await producer.connect();
    result.firstSentAt = Date.now();
    for (const note of notes) {
      const encoded = await codec.encode('NoteEvent', noteInputToNoteEvent(note), config.topics.input);
      sentAt.set(note.noteId, Date.now());
      await producer.send([{ topic: config.topics.input, messages: [{ key: note.noteId, value: encoded.value, headers: encoded.headers }] }]);
    }
    await Promise.race([allSeen, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  } finally {
    await producer?.close();
    await consumer.close();
  }
  return result;
}
