// npm run fuzz:stream — a few thousand mixed good, bad and crafted records through a running
// stage on the local broker; reports in / linked / dead-lettered by code / duplicates / lost and
// whether the stage stayed alive, and writes bench/results/stream-fuzz.json. Lost must be 0.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import avro from 'avsc';
import type { OutboundRecord } from '../src/stream/kafka/client-types.ts';
import { startStageRuntime } from '../src/cli/stage-runtime.ts';
import { createKafkaClient } from '../src/stream/kafka-client.ts';
import { startLocalBroker } from '../src/stream/local-broker.ts';
import { stageConfigSchema } from '../src/stream/stage-config.ts';
import { ensureTopics } from '../src/stream/topics.ts';
import { createRecordCodec, knownSchemas, noteInputToNoteEvent, SCHEMA_FINGERPRINT_HEADER, SINGLE_OBJECT_HEADER_BYTES } from '../src/stream/avro/index.ts';
import { buildPhenotypeIndex, noteMessage, publish, syntheticNotes, TopicCollector, waitFor } from '../test/support/stream-fixtures.ts';
import { seededRandom } from '../src/eval/seeded-random.ts';

const { values } = parseArgs({ options: { records: { type: 'string', default: '3000' }, seed: { type: 'string', default: '20261123' }, out: { type: 'string', default: join('bench', 'results', 'stream-fuzz.json') } } });
const total = Number(values.records);
const seed = Number(values.seed);


const random = seededRandom(seed);
const codec = createRecordCodec();
const noteType = knownSchemas().current('NoteEvent').type;
const fingerprint = { [SCHEMA_FINGERPRINT_HEADER]: knownSchemas().current('NoteEvent').fingerprint };
const LONG = avro.Type.forSchema('long');
const zz = (n: number) => LONG.toBuffer(n);
const str = (s: string | Buffer) => Buffer.concat([zz(Buffer.byteLength(s)), Buffer.from(s)]);

/** Kinds of record sent, with the weight of each. Expected: `linked` for good notes, a dead letter for the rest. */
const KINDS = ['good', 'garbage', 'mutated', 'crafted-count', 'crafted-length', 'unknown-schema', 'no-header', 'tombstone', 'bad-utf8', 'span-mismatch', 'too-many-mentions'] as const;
type Kind = (typeof KINDS)[number];
const WEIGHTS: Record<Kind, number> = { good: 50, garbage: 5, mutated: 10, 'crafted-count': 5, 'crafted-length': 5, 'unknown-schema': 5, 'no-header': 3, tombstone: 3, 'bad-utf8': 5, 'span-mismatch': 4, 'too-many-mentions': 5 };

function pick(): Kind {
  const sum = Object.values(WEIGHTS).reduce((a, b) => a + b, 0);
  let r = random() * sum;
  for (const kind of KINDS) {
    r -= WEIGHTS[kind];
    if (r < 0) return kind;
  }
  return 'good';
}

async function record(kind: Kind, i: number): Promise<OutboundRecord> {
  const key = `fuzz-${String(i).padStart(5, '0')}`;
  const [note] = syntheticNotes(1, key);
  const good = { ...note!, noteId: key };
  const valid = (await noteMessage(codec, good)) as OutboundRecord & { value: Buffer };
  const bytes = () => Buffer.from(Array.from({ length: 1 + Math.floor(random() * 80) }, () => Math.floor(random() * 256)));
  switch (kind) {
    case 'good':
      return valid;
    case 'garbage':
      return { key, value: bytes(), headers: fingerprint };
    case 'mutated': {
      const v = Buffer.from(valid.value);
      // Past the single-object header and the noteId, so that a mutation that still decodes keeps the key the output is matched by.
      const from = SINGLE_OBJECT_HEADER_BYTES + 1 + key.length;
      for (let e = 0; e < 1 + Math.floor(random() * 3); e++) v[from + Math.floor(random() * (v.length - from))] = Math.floor(random() * 256);
      return { key, value: v, headers: fingerprint };
    }
    case 'crafted-count':
      return { key, value: Buffer.concat([str(key), str('x y'), zz([2 ** 31 - 1, 1e7, 5e7, 1001][i % 4]!), bytes()]), headers: fingerprint };
    case 'crafted-length':
      return { key, value: Buffer.concat([zz([2 ** 31 - 1, 1e9, 65_536][i % 3]!), bytes()]), headers: fingerprint };
    case 'unknown-schema':
      return { ...valid, headers: { [SCHEMA_FINGERPRINT_HEADER]: 'f'.repeat(64) } };
    case 'no-header':
      // The plain Avro body without its single-object header, and no fingerprint header: nothing names the writer schema.
      return { key, value: valid.value.subarray(SINGLE_OBJECT_HEADER_BYTES), headers: {} };
    case 'tombstone':
      return { key, value: null, headers: {} };
    case 'bad-utf8': {
      const text = Buffer.concat([Buffer.from('Patient with '), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(' fever.')]);
      return { key, value: Buffer.concat([str(key), str(text), zz(0), Buffer.from([0]), zz(Date.now()), Buffer.from([0])]), headers: fingerprint };
    }
    case 'span-mismatch':
      return { key, value: noteType.toBuffer(noteInputToNoteEvent({ ...good, mentions: [{ ...good.mentions[0]!, text: 'not the span' }] }, Date.now())), headers: fingerprint };
    case 'too-many-mentions':
      return { key, value: noteType.toBuffer(noteInputToNoteEvent({ ...good, mentions: Array.from({ length: 60 }, (_, j) => ({ ...good.mentions[0]!, id: `m${j}` })) }, Date.now())), headers: fingerprint };
  }
}

const root = mkdtempSync(join(tmpdir(), 'cuilink-fuzz-'));
const broker = await startLocalBroker();
const started = Date.now();
let result: Record<string, unknown> | undefined;
try {
  const kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'stream-fuzz', logLevel: 'nothing' });
  const topics = { input: 'fuzz.in', output: 'fuzz.out', deadLetter: 'fuzz.dead' };
  await ensureTopics(kafka, [topics.input, topics.output, topics.deadLetter], { partitions: 3 });
  const config = stageConfigSchema.parse({
    brokers: broker.brokers,
    groupId: 'fuzz',
    topics,
    limits: { maxNoteChars: 5000, maxMentionsPerNote: 50 },
    // About half of the records are bad on purpose: the dead-letter-rate breaker would rightly stop the stream.
    deadLetterBreaker: { enabled: false },
    http: { host: '127.0.0.1', port: 0 },
    telemetry: { logLevel: 'error', kafkaLogLevel: 'error', prometheus: false },
    linker: { indexDir: await buildPhenotypeIndex(join(root, 'index')), threads: 1, rerankerDir: false },
  });
  const runtime = await startStageRuntime(config);
  const out = new TopicCollector(kafka, topics.output);
  const dead = new TopicCollector(kafka, topics.deadLetter);
  await Promise.all([runtime.stage.whenJoined(), out.start(), dead.start()]);
  const sent = new Map<string, Kind>();
  const messages: OutboundRecord[] = [];
  for (let i = 0; i < total; i++) {
    const kind = pick();
    const message = await record(kind, i);
    sent.set(String(message.key), kind);
    messages.push(message);
  }
  const publishStarted = Date.now();
  for (let i = 0; i < messages.length; i += 500) await publish(kafka, topics.input, messages.slice(i, i + 500));
  await waitFor(() => new Set([...out.keys(), ...dead.keys()]).size >= total, 600_000, 'every record out or dead-lettered').catch(() => {});
  await new Promise((r) => setTimeout(r, 2000));
  const seconds = (Date.now() - publishStarted) / 1000;
  const health = await fetch(`${runtime.health!.url}/healthz`).then((r) => r.status).catch(() => 0);
  const outKeys = out.keys();
  const deadKeys = dead.keys();
  const byCode: Record<string, number> = {};
  for (const r of dead.records) byCode[String(r.headers['cuilink-error-code'])] = (byCode[String(r.headers['cuilink-error-code'])] ?? 0) + 1;
  const byKind: Record<string, { sent: number; linked: number; deadLettered: number }> = {};
  for (const [key, kind] of sent) {
    byKind[kind] ??= { sent: 0, linked: 0, deadLettered: 0 };
    byKind[kind].sent++;
    if (outKeys.has(key)) byKind[kind].linked++;
    if (deadKeys.has(key)) byKind[kind].deadLettered++;
  }
  const lost = [...sent.keys()].filter((k) => !outKeys.has(k) && !deadKeys.has(k));
  const both = [...sent.keys()].filter((k) => outKeys.has(k) && deadKeys.has(k));
  const goodDeadLettered = byKind.good?.deadLettered ?? 0;
  const badLinked = Object.entries(byKind).filter(([kind]) => kind !== 'good' && kind !== 'mutated').reduce((sum, [, v]) => sum + v.linked, 0);
  result = {
    command: 'npm run fuzz:stream',
    date: new Date().toISOString(),
    seed,
    settingsChosenOn: 'none: a correctness run (defaults of the stage, no reranker, the fixture phenotype index); no tuning involved',
    in: total,
    linked: outKeys.size,
    deadLettered: deadKeys.size,
    deadLetteredByCode: byCode,
    duplicates: out.records.length - outKeys.size + (dead.records.length - deadKeys.size),
    lost: lost.length,
    linkedAndDeadLettered: both.length,
    goodNotesDeadLettered: goodDeadLettered,
    badRecordsLinked: badLinked,
    byKind,
    stageAlive: runtime.stage.live && health === 200,
    seconds: Number(seconds.toFixed(1)),
    pass: lost.length === 0 && both.length === 0 && goodDeadLettered === 0 && badLinked === 0 && runtime.stage.live && health === 200,
    note: "'mutated' records are valid notes with random bytes changed: some still decode as a valid note and are linked, the rest are dead-lettered",
  };
  await out.stop();
  await dead.stop();
  await runtime.close();
} finally {
  await broker.stop();
  rmSync(root, { recursive: true, force: true });
}
mkdirSync(join('bench', 'results'), { recursive: true });
writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify(result, null, 2));
console.log(`${((Date.now() - started) / 1000).toFixed(0)} s; ${result?.pass ? 'PASS' : 'FAIL'}: lost ${String(result?.lost)}, stage alive ${String(result?.stageAlive)}`);
process.exitCode = result?.pass ? 0 : 1;
