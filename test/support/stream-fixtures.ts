import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Partitioners, type IHeaders, type Kafka, type Message } from 'kafkajs';
import { buildIndexFromKb } from '../../src/link/build-index-from-kb.ts';
import { DEFAULT_MODEL_DIR } from '../../src/link/default-index.ts';
import type { NoteInput } from '../../src/link/types.ts';
import { noteInputToNoteEvent, type RecordCodec } from '../../src/stream/avro/index.ts';

export const PHENOTYPE_KB = join('test', 'fixtures', 'stream', 'phenotypes.jsonl');

/** A small real index: the fixture phenotype KB encoded with the real default bi-encoder. */
export async function buildPhenotypeIndex(outDir: string): Promise<string> {
  if (!existsSync(join(outDir, 'manifest.json'))) await buildIndexFromKb({ kbPaths: [PHENOTYPE_KB], modelDir: DEFAULT_MODEL_DIR, outDir, overwrite: true, progress: false });
  return outDir;
}

const FINDINGS = ['seizures', 'hypotonia', 'microcephaly', 'short stature', 'scoliosis', 'cataract', 'hepatomegaly', 'anemia', 'ataxia', 'nystagmus', 'headache', 'proteinuria', 'hypertension', 'fatigue', 'fever', 'arthralgia', 'hematuria', 'macrocephaly'];

/** `count` synthetic notes with two or three phenotype mentions each; `marker` is woven into every text and one mention. */
export function syntheticNotes(count: number, prefix: string, marker?: string): NoteInput[] {
  return Array.from({ length: count }, (_, i) => {
    const [a, b, c] = [FINDINGS[i % FINDINGS.length]!, FINDINGS[(i * 7 + 3) % FINDINGS.length]!, FINDINGS[(i * 5 + 11) % FINDINGS.length]!];
    const who = marker ? `${marker} patient` : 'Patient';
    const spans = i % 2 === 0 ? [a, b, c] : [a, b];
    const text = i % 2 === 0 ? `${who} ${i} seen for ${a} and ${b}; history of ${c}.` : `${who} ${i} reports ${a}. Exam notable for ${b}.`;
    let from = 0;
    const mentions = spans.map((span, j) => {
      const start = text.indexOf(span, from);
      from = start + span.length;
      return { id: `m${j + 1}`, start, end: start + span.length, text: span, label: 'Phenotype', score: 0.9 };
    });
    if (marker) {
      const start = text.indexOf(marker);
      mentions.push({ id: 'marker', start, end: start + marker.length, text: marker, label: 'Phenotype', score: 0.5 });
    }
    return { noteId: `${prefix}-${String(i).padStart(4, '0')}`, text, mentions, source: 'test', timestamp: Date.now(), nerModelVersion: 'test' };
  });
}

export async function noteMessage(codec: RecordCodec, note: NoteInput, headers: IHeaders = {}): Promise<Message> {
  const encoded = await codec.encode('NoteEvent', noteInputToNoteEvent(note));
  return { key: note.noteId, value: encoded.value, headers: { ...encoded.headers, ...headers } };
}

export async function publish(kafka: Kafka, topic: string, messages: Message[]): Promise<void> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages });
  } finally {
    await producer.disconnect();
  }
}

export interface ReadRecord {
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  headers: IHeaders;
}

/**
 * Reads `topics` from the beginning with a fresh consumer group until `done(records)` holds or
 * `timeoutMs` passes; read_committed unless told otherwise (what EOS consumers see).
 */
export async function readTopics(kafka: Kafka, topics: string[], done: (records: Map<string, ReadRecord[]>) => boolean, options: { timeoutMs?: number; readUncommitted?: boolean } = {}): Promise<Map<string, ReadRecord[]>> {
  const records = new Map<string, ReadRecord[]>(topics.map((t) => [t, []]));
  const consumer = kafka.consumer({ groupId: `reader-${process.pid}-${Math.random().toString(36).slice(2)}`, readUncommitted: options.readUncommitted ?? false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics, fromBeginning: true });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, options.timeoutMs ?? 60_000);
      void consumer.run({
        eachMessage: async ({ topic, partition, message }) => {
          records.get(topic)!.push({ partition, offset: message.offset, key: message.key?.toString() ?? null, value: message.value, headers: message.headers ?? {} });
          if (done(records)) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return records;
}

export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Collects a topic's records in the background (read_committed) until stopped. */
export class TopicCollector {
  readonly records: ReadRecord[] = [];
  private readonly consumer;

  constructor(kafka: Kafka, private readonly topic: string) {
    // A short fetch wait: the kill tests decide when to kill from what has arrived here, and the
    // default 5 s wait let a fast stage finish a whole wave before the collector saw its start.
    this.consumer = kafka.consumer({ groupId: `collector-${process.pid}-${Math.random().toString(36).slice(2)}`, readUncommitted: false, maxWaitTimeInMs: 100 });
  }

  async start(): Promise<void> {
    await this.consumer.connect();
    await this.consumer.subscribe({ topics: [this.topic], fromBeginning: true });
    await this.consumer.run({
      eachMessage: async ({ partition, message }) => {
        this.records.push({ partition, offset: message.offset, key: message.key?.toString() ?? null, value: message.value, headers: message.headers ?? {} });
      },
    });
  }

  keys(): Set<string> {
    return new Set(this.records.map((r) => r.key!));
  }

  stop(): Promise<void> {
    return this.consumer.disconnect();
  }
}
