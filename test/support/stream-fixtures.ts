import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildIndexFromKb } from '../../src/link/build-index-from-kb.ts';
import { DEFAULT_MODEL_DIR } from '../../src/link/default-index.ts';
import type { NoteInput } from '../../src/link/types.ts';
import { noteInputToNoteEvent, type RecordCodec } from '../../src/stream/avro/index.ts';
import type { InboundRecord, KafkaAdminClient, KafkaClient, KafkaConsumerClient, OutboundRecord } from '../../src/stream/kafka/client-types.ts';

export const PHENOTYPE_KB = join('test', 'fixtures', 'stream', 'phenotypes.jsonl');

/** A small real index: the fixture phenotype KB encoded with the real default bi-encoder. */
export async function buildPhenotypeIndex(outDir: string): Promise<string> {
  if (!existsSync(join(outDir, 'manifest.json'))) await buildIndexFromKb({ kbPaths: [PHENOTYPE_KB], modelDir: DEFAULT_MODEL_DIR, outDir, overwrite: true, progress: false });
  return outDir;
}

/** The one mention of `lumpNote`: no KB name, so only a memory can link it. */
export const LUMP_MENTION = 'zorbital lump';

/** A note with one Disease mention of `LUMP_MENTION`, its id the span (as the stage derives ids). */
export function lumpNote(id: string): NoteInput {
  const text = `Exam found a ${LUMP_MENTION} on the left.`;
  const start = text.indexOf(LUMP_MENTION);
  return { noteId: id, text, mentions: [{ id: `${start}-${start + LUMP_MENTION.length}`, start, end: start + LUMP_MENTION.length, text: LUMP_MENTION, label: 'Disease' }], source: 'test', timestamp: Date.now() };
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

export async function noteMessage(codec: RecordCodec, note: NoteInput, headers: Record<string, string | Buffer> = {}): Promise<OutboundRecord> {
  const encoded = await codec.encode('NoteEvent', noteInputToNoteEvent(note));
  return { key: note.noteId, value: encoded.value, headers: { ...encoded.headers, ...headers } };
}

/** Produces `messages` to `topic` in one request (idempotent, acks=all, partitioned by key as Java's client). */
export async function publish(kafka: KafkaClient, topic: string, messages: OutboundRecord[]): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send([{ topic, messages }]);
  } finally {
    await producer.close();
  }
}

export interface ReadRecord {
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  headers: Record<string, Buffer | Buffer[]>;
}

function readRecord(record: InboundRecord): ReadRecord {
  return { partition: record.partition, offset: record.offset, key: record.key?.toString() ?? null, value: record.value, headers: record.headers };
}

const randomGroup = (prefix: string) => `${prefix}-${process.pid}-${Math.random().toString(36).slice(2)}`;

/** Calls `fail` when the consumer gives up for good (no restart). */
function onFatalCrash(consumer: KafkaConsumerClient, fail: (error: unknown) => void): void {
  consumer.onCrash((error, restarting) => {
    if (!restarting) fail(error);
  });
}

/**
 * Reads `topics` from the beginning with a fresh consumer group until `done(records)` holds or
 * `timeoutMs` passes; read_committed unless told otherwise (what EOS consumers see). Records after
 * the one that made `done` hold are not taken.
 */
export async function readTopics(kafka: KafkaClient, topics: string[], done: (records: Map<string, ReadRecord[]>) => boolean, options: { timeoutMs?: number; readUncommitted?: boolean } = {}): Promise<Map<string, ReadRecord[]>> {
  const records = new Map<string, ReadRecord[]>(topics.map((t) => [t, []]));
  const consumer = kafka.consumer({ groupId: randomGroup('reader'), readCommitted: !(options.readUncommitted ?? false) });
  let finished = false;
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      const finish = (error?: unknown) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        if (error === undefined) resolve();
        else reject(error instanceof Error ? error : new Error(String(error)));
      };
      timer = setTimeout(() => finish(), options.timeoutMs ?? 60_000);
      onFatalCrash(consumer, (error) => finish(error ?? new Error('the reader consumer crashed')));
      consumer
        .run({
          topics,
          fromBeginning: true,
          eachBatch: async (batch) => {
            for (const message of batch.messages) {
              if (finished) return;
              records.get(batch.topic)!.push(readRecord(message));
              if (done(records)) finish();
            }
          },
        })
        .catch((error: unknown) => finish(error ?? new Error('the reader consumer failed to start')));
    });
  } finally {
    clearTimeout(timer);
    await consumer.close();
  }
  return records;
}

/** Waits until every partition of `topics` has a leader (a just-created topic may have none yet). */
export async function waitForLeaders(admin: KafkaAdminClient, topics: string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let last: unknown;
    try {
      const described = await admin.describeTopics(topics);
      if (described.length === topics.length && described.every((t) => t.ready)) return;
      last = JSON.stringify(described);
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`no leader for every partition of ${topics.join(', ')} within ${timeoutMs} ms (last: ${String(last)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
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
  private readonly consumer: KafkaConsumerClient;
  /** Set when the consumer gave up for good: `start` or `stop` rethrows it, so a dead collector fails the test instead of timing it out. */
  private crashed: unknown;

  constructor(kafka: KafkaClient, private readonly topic: string) {
    this.consumer = kafka.consumer({ groupId: randomGroup('collector'), readCommitted: true });
    onFatalCrash(this.consumer, (error) => (this.crashed = error ?? new Error(`the collector of ${topic} crashed`)));
  }

  async start(): Promise<void> {
    await this.consumer.run({
      topics: [this.topic],
      fromBeginning: true,
      eachBatch: async (batch) => {
        for (const message of batch.messages) this.records.push(readRecord(message));
      },
    });
    if (this.crashed !== undefined) throw this.crashed;
  }

  keys(): Set<string> {
    return new Set(this.records.map((r) => r.key!));
  }

  async stop(): Promise<void> {
    await this.consumer.close();
    if (this.crashed !== undefined) throw this.crashed;
  }
}
