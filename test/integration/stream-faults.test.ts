import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { OnnxSession } from '../../src/encode/onnx-session.ts';
import { DEFAULT_MODEL_DIR } from '../../src/link/default-index.ts';
import { stageConfigSchema, type StageConfig, type StageConfigInput } from '../../src/stream/stage-config.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { createRecordCodec, knownSchemas, SCHEMA_FINGERPRINT_HEADER } from '../../src/stream/avro/index.ts';
import { startStageRuntime, type StageRuntime } from '../../src/cli/stage-runtime.ts';
import type { NoteInput } from '../../src/link/types.ts';
import { CANDIDATES_CUT_HEADER } from '../../src/stream/output-fitter.ts';
import { StageProcess } from '../support/stage-process.ts';
import { BrokerBed } from '../support/broker-bed.ts';
import { noteMessage, publish, syntheticNotes, TopicCollector, waitFor, waitForLeaders } from '../support/stream-fixtures.ts';

// Poison records and internal faults on a real broker, with the real default bi-encoder over the
// small phenotype index (no reranker: the faults are in the stream and the encoder worker).
const bed = new BrokerBed('faults');
const codec = createRecordCodec();
const NOTE_FINGERPRINT = knownSchemas().current('NoteEvent').fingerprint;

before(() => bed.start());
after(() => bed.stop());

interface Topics {
  input: string;
  output: string;
  deadLetter: string;
  maxMessageBytes?: number;
}

async function topicsFor(name: string, partitions = 2): Promise<Topics> {
  const t = { input: `${name}.in`, output: `${name}.out`, deadLetter: `${name}.dead` };
  await ensureTopics(bed.kafka, [t.input, t.output, t.deadLetter], { partitions });
  return t;
}

function configFor(name: string, topics: Topics, extra: Partial<StageConfigInput> = {}): StageConfig {
  return stageConfigSchema.parse({
    brokers: bed.broker.brokers,
    groupId: `${name}-group`,
    topics,
    batching: { maxMentions: 8, maxInFlightMentions: 64 },
    limits: { maxNoteChars: 5000, maxMentionsPerNote: 50 },
    consumer: { sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1000 },
    retry: { maxAttempts: 8, initialBackoffMs: 100, maxBackoffMs: 2000 },
    http: { host: '127.0.0.1', port: 0 },
    telemetry: { logLevel: 'warn', kafkaLogLevel: 'error', prometheus: false },
    linker: { indexDir: bed.indexDir, threads: 1, rerankerDir: false },
    // Every mention through the encoder: the link cache and stored exact-name vectors would answer
    // these repeated synthetic mentions without it, and the faults here are the encoder's.
    link: { cache: { maxEntries: 0 }, exactVectors: false },
    ...extra,
  });
}

async function committed(groupId: string, topic: string): Promise<number> {
  const admin = bed.kafka.admin();
  try {
    const offsets = await admin.committedOffsets(groupId, topic);
    return offsets.reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
  } finally {
    await admin.close();
  }
}

test('a 9-byte record claiming 2^31-1 mentions is dead-lettered at once; the good note behind it is linked; the stage keeps running', async () => {
  const topics = await topicsFor('poison-count', 1);
  const logs: string[] = [];
  const runtime = await startStageRuntime(configFor('poison-count', topics), { logSink: (l) => logs.push(l) });
  const out = new TopicCollector(bed.kafka, topics.output);
  const dead = new TopicCollector(bed.kafka, topics.deadLetter);
  try {
    await Promise.all([runtime.stage.whenJoined(), out.start(), dead.start()]);
    const [before, after] = syntheticNotes(2, 'behind-poison');
    const poison = { key: 'poison', value: Buffer.from('02780279feffffff0f', 'hex'), headers: { [SCHEMA_FINGERPRINT_HEADER]: NOTE_FINGERPRINT } };
    const started = Date.now();
    await publish(bed.kafka, topics.input, [await noteMessage(codec, before!), poison, poison, await noteMessage(codec, after!)]);
    await waitFor(() => out.records.length >= 2 && dead.records.length >= 2, 60_000, 'the good notes and the dead letters');
    assert.ok(Date.now() - started < 30_000, 'no minute-long allocation loop');
    assert.deepEqual([...out.keys()].sort(), [before!.noteId, after!.noteId].sort(), 'the notes before and behind the poison are linked');
    for (const record of dead.records) {
      assert.equal(String(record.headers['cuilink-error-code']), 'NOTE_TOO_LARGE');
      const letter = await codec.decode('DeadLetter', record.value, record.headers as never);
      assert.deepEqual(Buffer.from(letter.original!), poison.value, 'the original bytes');
    }
    assert.equal(runtime.stage.live, true);
    assert.equal((await fetch(`${runtime.health!.url}/healthz`)).status, 200);
    await waitFor(async () => (await committed('poison-count-group', topics.input)) === 4, 10_000, 'all four offsets committed');
    const { counts } = runtime.stage.stats();
    assert.equal(counts.consumed, counts.produced + counts.deadLettered, 'in = out + dead-lettered');
    assert.ok(process.memoryUsage().rss < 2 * 1024 ** 3, 'memory stays bounded');
  } finally {
    await out.stop();
    await dead.stop();
    await runtime.close();
  }
});

test('the encoder worker killed mid-stream is restarted: every note linked once, none dead-lettered, /readyz 503 meanwhile', async (ctx) => {
  const topics = await topicsFor('worker-kill');
  const runtime = await startStageRuntime(configFor('worker-kill', topics));
  const out = new TopicCollector(bed.kafka, topics.output);
  const dead = new TopicCollector(bed.kafka, topics.deadLetter);
  const readyStatuses = new Set<number>();
  let polling = true;
  const poll = (async () => {
    while (polling) {
      readyStatuses.add((await fetch(`${runtime.health!.url}/readyz`)).status);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    await Promise.all([runtime.stage.whenJoined(), out.start(), dead.start()]);
    const notes = syntheticNotes(120, 'kill');
    await publish(bed.kafka, topics.input, await Promise.all(notes.map((n) => noteMessage(codec, n))));
    const sessions = OnnxSession.openSessions();
    assert.equal(sessions.length, 1, 'the bi-encoder session');
    // The stage's own count (the collector may lag), so that each kill lands mid-stream.
    const produced = () => runtime.stage.stats().counts.produced;
    await waitFor(() => produced() >= 10, 60_000, 'the first outputs');
    await sessions[0]!.killWorker();
    await waitFor(() => produced() >= 40, 60_000, 'outputs after the first restart');
    await sessions[0]!.killWorker();
    ctx.diagnostic(`second kill after ${produced()} of ${notes.length} notes produced`);
    await waitFor(() => out.keys().size >= notes.length, 90_000, 'every note linked');
    assert.ok(sessions[0]!.restarts >= 2, `worker restarted (${sessions[0]!.restarts})`);
    await new Promise((r) => setTimeout(r, 1000));
    assert.deepEqual(out.records.map((r) => r.key).sort(), notes.map((n) => n.noteId).sort(), 'every note linked exactly once');
    assert.equal(dead.records.length, 0, 'nothing dead-lettered');
    assert.equal(runtime.stage.live, true);
    assert.ok(readyStatuses.has(503), '/readyz said 503 while the linker was unavailable');
    await waitFor(() => runtime.stage.ready, 10_000, 'ready again');
    assert.equal((await fetch(`${runtime.health!.url}/readyz`)).status, 200);
  } finally {
    polling = false;
    await poll;
    await out.stop();
    await dead.stop();
    await runtime.close();
  }
});

test('an encoder that cannot be restarted stops the stage without committing; a restarted stage links everything, nothing dead-lettered', async () => {
  const topics = await topicsFor('worker-dead');
  const modelDir = join(bed.root, 'model-copy');
  cpSync(DEFAULT_MODEL_DIR, modelDir, { recursive: true });
  const config = configFor('worker-dead', topics, { linker: { indexDir: bed.indexDir, modelDir, threads: 1, rerankerDir: false } });
  const first = await startStageRuntime(config);
  const dead = new TopicCollector(bed.kafka, topics.deadLetter);
  const out = new TopicCollector(bed.kafka, topics.output);
  let second: StageRuntime | undefined;
  try {
    await Promise.all([first.stage.whenJoined(), dead.start(), out.start()]);
    const fatal = new Promise<unknown>((resolve) => first.stage.onFatal(resolve));
    const warmup = syntheticNotes(4, 'dead-warmup');
    await publish(bed.kafka, topics.input, await Promise.all(warmup.map((n) => noteMessage(codec, n))));
    await waitFor(() => out.records.length >= warmup.length, 60_000, 'warm-up notes');
    // The model file disappears, then the worker dies: every restart fails.
    for (const file of readdirSync(modelDir).filter((f) => f.endsWith('.onnx'))) rmSync(join(modelDir, file));
    await OnnxSession.openSessions()[0]!.killWorker();
    const notes = syntheticNotes(20, 'dead');
    await publish(bed.kafka, topics.input, await Promise.all(notes.map((n) => noteMessage(codec, n))));
    const error = await fatal;
    assert.equal((error as { code?: string }).code, 'ENCODER_FAILED');
    assert.equal((await fetch(`${first.health!.url}/healthz`)).status, 503, '/healthz fails');
    await first.close();
    assert.equal(await committed('worker-dead-group', topics.input), warmup.length, 'nothing after the fault was committed');
    assert.equal(dead.records.length, 0, 'nothing dead-lettered');

    // A supervisor restarts the process with its model back: the uncommitted notes are linked.
    cpSync(DEFAULT_MODEL_DIR, modelDir, { recursive: true });
    second = await startStageRuntime(config);
    await waitFor(() => out.keys().size >= warmup.length + notes.length, 90_000, 'every note linked after the restart');
    assert.deepEqual([...out.keys()].sort(), [...warmup, ...notes].map((n) => n.noteId).sort());
    assert.equal(dead.records.length, 0);
  } finally {
    await dead.stop();
    await out.stop();
    await first.close();
    await second?.close();
  }
});

const SMALL_TOPIC_BYTES = 16_384;

/** Topics whose output and dead-letter topics accept at most SMALL_TOPIC_BYTES per record batch. */
async function smallTopics(name: string): Promise<{ input: string; output: string; deadLetter: string }> {
  const t = { input: `${name}.in`, output: `${name}.out`, deadLetter: `${name}.dead` };
  await ensureTopics(bed.kafka, [t.input], { partitions: 1 });
  const admin = bed.kafka.admin();
  try {
    const configs = { 'max.message.bytes': String(SMALL_TOPIC_BYTES) };
    await admin.createTopics([t.output, t.deadLetter].map((topic) => ({ topic, partitions: 2, replicationFactor: 1, configs })));
    await waitForLeaders(admin, [t.output, t.deadLetter]);
  } finally {
    await admin.close();
  }
  return t;
}

const FINDINGS = ['seizures', 'hypotonia', 'ataxia', 'scoliosis', 'cataract', 'anemia'];

/** A valid note with `count` mentions. */
function manyMentions(noteId: string, count: number): NoteInput {
  const parts: string[] = [];
  const mentions: NoteInput['mentions'] = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const word = FINDINGS[i % FINDINGS.length]!;
    mentions.push({ id: `m${i}`, start: at, end: at + word.length, text: word, label: 'Phenotype' });
    parts.push(word);
    at += word.length + 2;
  }
  return { noteId, text: parts.join('; '), mentions, timestamp: Date.now() };
}

async function outputSizeScenario(name: string, maxMessageBytes?: number): Promise<void> {
  const topics = await smallTopics(name);
  // 202 of the 204 records are dead-lettered on purpose (batches of dead letters must be bounded
  // too): the dead-letter-rate breaker would rightly stop such a stream, so it is off here.
  const runtime = await startStageRuntime(configFor(name, { ...topics, ...(maxMessageBytes ? { maxMessageBytes } : {}) }, { link: { topK: 20 }, limits: { maxNoteChars: 100_000, maxMentionsPerNote: 1000 }, deadLetterBreaker: { enabled: false } }));
  const out = new TopicCollector(bed.kafka, topics.output);
  const dead = new TopicCollector(bed.kafka, topics.deadLetter);
  try {
    await Promise.all([runtime.stage.whenJoined(), out.start(), dead.start()]);
    const fingerprint = { [SCHEMA_FINGERPRINT_HEADER]: 'f'.repeat(64) };
    const big = { key: `${name}-big-bad`, value: Buffer.alloc(50_000, 7), headers: fingerprint };
    const many = Array.from({ length: 200 }, (_, i) => ({ key: `${name}-bad-${i}`, value: Buffer.alloc(1000, i % 256), headers: fingerprint }));
    const cut = manyMentions(`${name}-cut`, 60);
    const tooLarge = manyMentions(`${name}-too-large`, 250);
    const [good] = syntheticNotes(1, `${name}-good`);
    const messages = [await noteMessage(codec, cut), await noteMessage(codec, tooLarge), big, ...many, await noteMessage(codec, good!)];
    await publish(bed.kafka, topics.input, messages);
    await waitFor(() => out.keys().size + dead.keys().size >= messages.length, 90_000, 'every record out or dead-lettered');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(out.keys().size + dead.keys().size, messages.length, 'in = out + dead-lettered');
    // A refused request is redone whole (at-least-once): what it shared with accepted records may repeat.
    if (maxMessageBytes === undefined) assert.equal(out.records.length + dead.records.length, messages.length, 'nothing twice');
    assert.deepEqual([...out.keys()].sort(), [cut.noteId, good!.noteId].sort());

    const cutRecord = out.records.find((r) => r.key === cut.noteId)!;
    assert.ok(cutRecord.value!.length <= SMALL_TOPIC_BYTES);
    const keep = Number(String(cutRecord.headers[CANDIDATES_CUT_HEADER]));
    assert.ok(keep >= 0 && keep < 20, `candidates cut to ${keep} per mention`);
    const linked = await codec.decode('LinkedNote', cutRecord.value, cutRecord.headers as never);
    assert.equal(linked.mentions.length, 60, 'every mention kept');
    assert.ok(linked.mentions.every((m) => m.candidates.length <= keep && (m.nil || m.conceptId !== null)));

    const letters = new Map<string, Awaited<ReturnType<typeof codec.decode<'DeadLetter'>>>>();
    for (const r of dead.records) letters.set(r.key!, await codec.decode('DeadLetter', r.value, r.headers as never));
    const tooLargeLetter = letters.get(tooLarge.noteId)!;
    assert.equal(tooLargeLetter.errorCode, 'OUTPUT_TOO_LARGE');
    assert.equal(tooLargeLetter.stage, 'produce');
    const bigLetter = letters.get(big.key)!;
    assert.equal(bigLetter.errorCode, 'UNKNOWN_SCHEMA');
    assert.equal(bigLetter.originalTruncated, true);
    assert.equal(bigLetter.originalSize, big.value.length);
    assert.equal(bigLetter.originalSha256, createHash('sha256').update(big.value).digest('hex'));
    assert.ok(bigLetter.original!.length > 1000 && big.value.subarray(0, bigLetter.original!.length).equals(Buffer.from(bigLetter.original!)), 'a prefix of the original');
    assert.equal(bigLetter.sourceTopic, topics.input);
    for (const m of many) assert.equal(letters.get(m.key)?.errorCode, 'UNKNOWN_SCHEMA', m.key);
    for (const r of dead.records) assert.ok(r.value!.length <= SMALL_TOPIC_BYTES);

    assert.equal(runtime.stage.live, true);
    const { counts } = runtime.stage.stats();
    assert.equal(counts.consumed, counts.produced + counts.deadLettered, 'in = out + dead-lettered (counters)');
    assert.ok(counts.consumed >= messages.length);
  } finally {
    await out.stop();
    await dead.stop();
    await runtime.close();
  }
}

test('outputs and dead letters larger than the topics accept: candidates cut, OUTPUT_TOO_LARGE, a cut original with its sha256; batches bounded; the good note behind is linked', async () => {
  await outputSizeScenario('size-known');
});

test('a broker that refuses a record the stage thought fit (MESSAGE_TOO_LARGE): only that record is cut, the partition moves on', async () => {
  // The configured limit is above the topics' real one: the broker refuses, the stage learns.
  await outputSizeScenario('size-refused', 1_000_000);
});

test('a broker that is down at start: one JSON line with the cause, exit code 3, no stack trace', async () => {
  const stage = new StageProcess(bed.root, 'broker-down', {
    brokers: ['127.0.0.1:9'],
    groupId: 'broker-down',
    http: { host: '127.0.0.1', port: 0 },
    linker: { indexDir: bed.indexDir, threads: 1, rerankerDir: false },
  });
  const code = await stage.exited;
  assert.equal(code, 3);
  const last = JSON.parse(stage.lines.filter((l) => l.startsWith('{')).at(-1)!) as { level: string; message: string; exitCode: number; cause: { message: string } };
  assert.equal(last.message, 'exiting: the stage could not start');
  assert.equal(last.exitCode, 3);
  assert.match(last.cause.message, /ECONNREFUSED|connect/i);
  assert.ok(!stage.lines.some((l) => /^\s+at /.test(l)), 'no uncaught stack trace');
  assert.ok(!stage.lines.some((l) => l.includes('drain')), 'no drain was pretended');
});
