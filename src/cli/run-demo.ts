import { readFileSync } from 'node:fs';
import { Partitioners, type Kafka } from 'kafkajs';
import type { NoteInput } from '../link/types.ts';
import { avroToLinkedNote, noteInputToNoteEvent, type RecordCodec } from '../stream/avro/index.ts';
import { mentionsToReview } from '../stream/review-selection.ts';
import { InputError } from '../kb/errors.ts';
import type { StageConfig } from '../stream/stage-config.ts';

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
    try {
      const value = JSON.parse(line) as NoteInput;
      if (typeof value !== 'object' || value === null || typeof value.noteId !== 'string') throw new Error('not a note event object with a noteId');
      notes.push(value);
    } catch (error) {
      skipped.push({ line: i + 1, reason: (error as Error).message });
    }
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
export async function publishAndCollect(kafka: Kafka, codec: RecordCodec, config: StageConfig, notes: NoteInput[], timeoutMs: number): Promise<DemoResult> {
  const result: DemoResult = { linked: new Map(), deadLettered: new Map(), firstSentAt: 0, lastReceivedAt: 0, latenciesMs: [], reviewed: new Set() };
  const reviewTopic = config.topics.review;
  const sentAt = new Map<string, number>();
  const consumer = kafka.consumer({ groupId: `cuilink-run-demo-${process.pid}-${Date.now()}`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topics: [config.topics.output, config.topics.deadLetter, ...(reviewTopic === undefined ? [] : [reviewTopic])], fromBeginning: false });
  // Every note back, and every review record its linked output implies (they are produced together but read in any order).
  const complete = () =>
    result.linked.size + result.deadLettered.size >= wanted.size &&
    (reviewTopic === undefined || [...result.linked.values()].every((note) => mentionsToReview(note, config.review.belowConfidence).every((m) => result.reviewed.has(`${note.noteId}/${m.mentionId}`))));
  const wanted = new Set(notes.map((n) => n.noteId));
  let done!: () => void;
  const allSeen = new Promise<void>((resolve) => (done = resolve));
  let joined!: () => void;
  const hasJoined = new Promise<void>((resolve) => (joined = resolve));
  consumer.on(consumer.events.GROUP_JOIN, () => joined());
  await consumer.run({
    eachMessage: async ({ topic, message }) => {
      const now = Date.now();
      if (topic === reviewTopic) {
        const review = await codec.decode('ReviewMention', message.value, message.headers as never);
        if (wanted.has(review.noteId)) result.reviewed.add(`${review.noteId}/${review.mentionId}`);
      } else if (topic === config.topics.output) {
        const linked = avroToLinkedNote(await codec.decode('LinkedNote', message.value, message.headers as never));
        if (!wanted.has(linked.noteId)) return;
        result.linked.set(linked.noteId, linked);
        if (sentAt.has(linked.noteId)) result.latenciesMs.push(now - sentAt.get(linked.noteId)!);
      } else {
        const dead = await codec.decode('DeadLetter', message.value, message.headers as never);
        const noteId = message.key?.toString() ?? `${dead.sourceTopic}/${dead.partition}/${dead.offset}`;
        result.deadLettered.set(noteId, { errorCode: dead.errorCode, reason: dead.reason });
      }
      result.lastReceivedAt = now;
      if (complete()) done();
    },
  });
  // The output consumer starts at the log end: it must be in its group before anything is published.
  await hasJoined;
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  try {
    result.firstSentAt = Date.now();
    for (const note of notes) {
      const encoded = await codec.encode('NoteEvent', noteInputToNoteEvent(note));
      sentAt.set(note.noteId, Date.now());
      await producer.send({ topic: config.topics.input, acks: -1, messages: [{ key: note.noteId, value: encoded.value, headers: encoded.headers }] });
    }
    await Promise.race([allSeen, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  } finally {
    await producer.disconnect();
    await consumer.disconnect();
  }
  return result;
}
