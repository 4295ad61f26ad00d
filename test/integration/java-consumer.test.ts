// examples/java-consumer (Apache Kafka's Java client + Avro's own BinaryMessageDecoder, no cuilink
// code) built with Maven and run against an exactly-once stage on the real local broker: it reads
// every LinkedNote the stage wrote (read_committed) and prints, for each mention, the concept id
// cuilink's own reader sees; a LinkedNote written with an older schema (v2) is read with defaults.
// Also: bad options are exit 2 with the reason and the usage line; --max-notes commits no further
// than it printed; a record in a format another build could read (a newer schema, a registry's)
// stops it uncommitted, the deprecated header format is read, an unreadable value is skipped; an
// unreachable broker is exit 3 and one line after --connect-timeout-ms; output is UTF-8 under LC_ALL=C.
//
// Skipped, saying so, only when `mvn` is not on PATH (.ci/run installs it). The first build
// fetches Avro and a few Maven plugins from Maven Central into ~/.m2; later builds run offline.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { avroToLinkedNote, createRecordCodec, knownSchemas, linkedNoteToAvro, SCHEMA_FINGERPRINT_HEADER, type LinkedNoteRecord } from '../../src/stream/avro/index.ts';
import type { OutboundRecord } from '../../src/stream/kafka/client-types.ts';
import type { LinkedNote } from '../../src/link/types.ts';
import { buildPhenotypeIndex, noteMessage, publish, syntheticNotes, TopicCollector, waitFor } from '../support/stream-fixtures.ts';
import { StageProcess } from '../support/stage-process.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLE = join(REPO, 'examples', 'java-consumer');
const JAR = join(EXAMPLE, 'target', 'cuilink-java-consumer.jar');
const MAVEN = spawnSync('mvn', ['-v'], { encoding: 'utf8' });
const SKIP = MAVEN.error !== undefined ? 'mvn is not on PATH: examples/java-consumer cannot be built (install Maven; .ci/run does)' : false;

let broker: LocalBroker;
let root: string;
let kafka: KafkaClient;
let build: { seconds: number; offline: boolean };
let stage: StageProcess | undefined;
const codec = createRecordCodec();

before(async () => {
  if (SKIP) return;
  build = buildExample();
  root = mkdtempSync(join(tmpdir(), 'cuilink-java-consumer-'));
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'java-consumer-test', logLevel: 'nothing' });
});

after(async () => {
  if (stage && stage.child.exitCode === null) stage.kill('SIGKILL');
  await broker?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** `mvn package`, offline first (a warm ~/.m2 needs no network), online when that fails; returns the seconds it took. */
function buildExample(): { seconds: number; offline: boolean } {
  const started = performance.now();
  const args = ['-q', '-B', '-f', join(EXAMPLE, 'pom.xml'), 'package'];
  let offline = true;
  let result = spawnSync('mvn', ['-o', ...args], { encoding: 'utf8', timeout: 300_000 });
  if (result.status !== 0) {
    offline = false;
    result = spawnSync('mvn', args, { encoding: 'utf8', timeout: 300_000 });
  }
  assert.equal(result.status, 0, `mvn package of examples/java-consumer failed:\n${result.stdout.slice(-3000)}\n${result.stderr.slice(-3000)}`);
  return { seconds: (performance.now() - started) / 1000, offline };
}

/** Runs the consumer until it exits; `timeoutMs` is only a hang guard. */
function runConsumer(args: string[], timeoutMs = 120_000, jvm: { options?: string[]; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('java', [...(jvm.options ?? []), '-jar', JAR, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...jvm.env } });
  // Whole buffers, decoded once: a UTF-8 character split across two chunks must not be mangled here.
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let killed = '';
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      killed = `\n[test] no exit within ${timeoutMs} ms: killed\n`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') + killed });
    });
  });
}

/** The line the example prints for a note: `n-0001: m1 -> HP:0001250, m2 -> NIL`. */
function expectedLine(note: LinkedNote): string {
  return `${note.noteId}:${note.mentions.map((m, i) => `${i === 0 ? ' ' : ', '}${m.mentionId} -> ${m.conceptId ?? 'NIL'}`).join('')}`;
}

test('the Java example (kafka-clients + Avro BinaryMessageDecoder) reads every LinkedNote of an exactly-once stage, older schema versions included', { skip: SKIP, timeout: 15 * 60_000 }, async (ctx) => {
  const indexDir = await buildPhenotypeIndex(join(root, 'index'));
  ctx.diagnostic(`mvn package took ${build.seconds.toFixed(1)} s (${build.offline ? 'offline, from ~/.m2' : 'online: fetched what ~/.m2 lacked'})`);

  const t = { input: 'java.in', output: 'java.out', deadLetter: 'java.dead' };
  await ensureTopics(kafka, [t.input, t.output], { partitions: 2 });
  await ensureTopics(kafka, [t.deadLetter], { partitions: 1 });
  stage = new StageProcess(root, 'java-stage', {
    brokers: broker.brokers,
    groupId: 'java-stage-group',
    topics: t,
    delivery: 'exactly-once',
    consumer: { sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 },
    drainTimeoutMs: 20_000,
    http: { host: '127.0.0.1', port: 0 },
    linker: { indexDir, threads: 1 },
  });

  const notes = syntheticNotes(8, 'java');
  const out = new TopicCollector(kafka, t.output);
  await out.start();
  let linked: LinkedNote[];
  try {
    await publish(kafka, t.input, await Promise.all(notes.map((n) => noteMessage(codec, n))));
    await waitFor(() => notes.every((n) => out.keys().has(n.noteId)), 180_000, 'every note linked by the stage').catch((error: Error) => {
      throw new Error(`${error.message} (${out.keys().size} of ${notes.length}); the stage's last lines:\n${stage!.lines.slice(-15).join('\n')}`);
    });
    linked = await Promise.all(out.records.map(async (r) => avroToLinkedNote(await codec.decode('LinkedNote', r.value, r.headers))));
    // What the stage wrote is single-object encoded with the current LinkedNote fingerprint.
    const header = Buffer.concat([Buffer.from([0xc3, 0x01]), knownSchemas().current('LinkedNote').singleObjectFingerprint]);
    for (const r of out.records) assert.deepEqual(r.value!.subarray(0, 10), header, `${r.key}: C3 01 + the LinkedNote CRC-64-AVRO fingerprint`);
  } finally {
    await out.stop();
  }
  assert.ok(linked.some((n) => n.mentions.some((m) => m.conceptId !== null)), 'some mention linked to a concept');

  // A LinkedNote written before the v3 schema (v2: no confidence, no via), as a consumer finds after an upgrade.
  const v2 = knownSchemas().all('LinkedNote').find((s) => /linked-note\.v2\.avsc$/.test(s.file))!;
  const current = linkedNoteToAvro(linked[0]!);
  const old = { ...current, noteId: 'java-v2', mentions: current.mentions.map(({ confidence: _c, via: _v, ...m }) => ({ ...m, candidates: m.candidates.map(({ via: _cv, ...c }) => c) })) };
  await publish(kafka, t.output, [{ key: 'java-v2', value: Buffer.concat([Buffer.from([0xc3, 0x01]), v2.singleObjectFingerprint, v2.type.toBuffer(old)]) }]);

  const run = await runConsumer(['--brokers', broker.brokers.join(','), '--topic', t.output, '--group', 'java-example', '--max-notes', String(linked.length + 1), '--idle-exit-ms', '60000'], 120_000);
  const tail = `\n--- stdout ---\n${run.stdout.slice(-3000)}\n--- stderr ---\n${run.stderr.slice(-3000)}`;
  assert.equal(run.code, 0, `the consumer exits 0${tail}`);
  const printed = run.stdout.trim().split('\n').sort();
  const expected = [...linked.map(expectedLine), expectedLine({ ...linked[0]!, noteId: 'java-v2' })].sort();
  assert.deepEqual(printed, expected, `one line per note, the concept ids cuilink's reader sees${tail}`);
  const older = knownSchemas().all('LinkedNote').length - 1;
  assert.ok(run.stderr.includes(`reader schema org.cuilink.LinkedNote fingerprint ${knownSchemas().current('LinkedNote').singleObjectFingerprint.toString('hex')}, ${older} older version(s) known`), `Java's fingerprint of the reader schema is cuilink's${tail}`);
  assert.match(run.stderr, new RegExp(`read ${linked.length + 1} LinkedNote\\(s\\) from ${t.output.replace('.', '\\.')}, skipped 0`), tail);

  stage.kill('SIGTERM');
  assert.equal(await stage.exited, 0, `the stage drains and exits 0:\n${stage.lines.slice(-5).join('\n')}`);
});

const USAGE_LINE = 'usage: java -jar cuilink-java-consumer.jar --brokers HOST:PORT[,...] [--topic T] [--group G] [--max-notes N] [--idle-exit-ms MS] [--connect-timeout-ms MS]';

test('the Java example refuses unknown options, missing values and malformed numbers: exit 2, the reason and the usage line', { skip: SKIP, timeout: 10 * 60_000 }, async () => {
  // Nothing listens on port 1; --idle-exit-ms lets a consumer that accepted the options end on its own.
  const dead = ['--brokers', '127.0.0.1:1'];
  const idle = ['--idle-exit-ms', '1000'];
  const cases: Array<[string[], string]> = [
    [[...dead, '--min-confidenc', '0.9', ...idle], 'unknown option --min-confidenc'],
    [[...dead, '--min-confidence=0.9', ...idle], 'unknown option --min-confidence'],
    [[...dead, '--max-notes', 'ten', ...idle], "--max-notes must be a whole number, got 'ten'"],
    [[...dead, '--idle-exit-ms', '2.5'], "--idle-exit-ms must be a whole number, got '2.5'"],
    [[...dead, '--max-notes', '-5', ...idle], '--max-notes must be at least 1, got -5'],
    [[...dead, ...idle, '--max-notes'], '--max-notes needs a value'],
    [['--brokers', '--topic', 't', ...idle], '--brokers needs a value, got the option --topic'],
    [[...dead, '--topic', 'a', '--topic', 'b', ...idle], '--topic given more than once (it takes one value)'],
    [[...dead, 'stray', ...idle], "unexpected argument 'stray' (options are --name value)"],
    [[...dead, '--connect-timeout-ms', '0', ...idle], '--connect-timeout-ms must be at least 1, got 0'],
    [['--topic', 't', ...idle], 'missing required option --brokers'],
  ];
  for (const [args, reason] of cases) {
    const run = await runConsumer(args);
    const what = `${args.join(' ')}\n--- stdout ---\n${run.stdout}\n--- stderr ---\n${run.stderr.slice(-2000)}`;
    assert.equal(run.code, 2, `exit 2 for ${what}`);
    assert.deepEqual(run.stderr.trim().split('\n'), [`cuilink-java-consumer: ${reason}`, USAGE_LINE], what);
    assert.equal(run.stdout, '', what);
  }
  const help = await runConsumer(['--help']);
  assert.equal(help.code, 0, help.stderr);
  assert.ok(help.stdout.startsWith(`${USAGE_LINE}\n`), help.stdout);
  assert.match(help.stdout, /--max-notes N/);
});

/** A LinkedNote of two mentions, `m1 -> HP:0001250, m2 -> NIL`, in the current schema's record form. */
function linkedRecord(noteId: string): LinkedNoteRecord {
  const linked = { conceptId: 'HP:0001250', name: 'Seizure', semanticTypes: [], score: 0.9, retrievalScore: 0.9, exact: true, via: 'exact' };
  return {
    noteId,
    mentions: [
      { mentionId: 'm1', start: 0, end: 8, label: 'Phenotype', conceptId: 'HP:0001250', conceptName: 'Seizure', semanticTypes: [], score: 0.9, confidence: 0.8, via: 'exact', inKb: 0.9, nil: false, reranked: false, candidates: [linked], expandedFrom: null, memoryDecided: false, memorySupport: 0 },
      { mentionId: 'm2', start: 10, end: 14, label: 'Phenotype', conceptId: null, conceptName: null, semanticTypes: [], score: 0.1, confidence: null, via: null, inKb: null, nil: true, reranked: false, candidates: [], expandedFrom: null, memoryDecided: false, memorySupport: 0 },
    ],
    linkerVersion: 'test',
    modelVersion: 'test',
    indexVersion: 'test',
    memoryVersion: null,
    linkedAt: 1_700_000_000_000,
  };
}

async function singleObject(noteId: string): Promise<OutboundRecord> {
  const encoded = await codec.encode('LinkedNote', linkedRecord(noteId));
  return { key: noteId, value: encoded.value, headers: encoded.headers };
}

/** The Avro binary of the current schema behind `prefix`: C3 01 + an unknown fingerprint, or a Confluent header. */
function framed(noteId: string, prefix: number[]): OutboundRecord {
  return { key: noteId, value: Buffer.concat([Buffer.from(prefix), knownSchemas().current('LinkedNote').type.toBuffer(linkedRecord(noteId))]) };
}

const line = (noteId: string) => `${noteId}: m1 -> HP:0001250, m2 -> NIL`;
const printed = (stdout: string) => stdout.split('\n').filter((l) => l !== '');

test('the Java example commits no further than the notes it printed: --max-notes N prints N, the next run the rest', { skip: SKIP, timeout: 10 * 60_000 }, async () => {
  const topic = 'java.max';
  await ensureTopics(kafka, [topic], { partitions: 1 });
  const ids = ['max-0', 'max-1', 'max-2', 'max-3', 'max-4'];
  await publish(kafka, topic, await Promise.all(ids.map(singleObject)));
  const args = ['--brokers', broker.brokers.join(','), '--topic', topic, '--group', 'java-max', '--idle-exit-ms', '10000'];

  const first = await runConsumer([...args, '--max-notes', '2']);
  assert.equal(first.code, 0, first.stderr);
  assert.deepEqual(printed(first.stdout), ids.slice(0, 2).map(line), `--max-notes 2 prints two notes\n${first.stderr}`);
  const second = await runConsumer([...args, '--max-notes', '3']);
  assert.equal(second.code, 0, second.stderr);
  assert.deepEqual(printed(second.stdout), ids.slice(2).map(line), `the next run starts after them\n${second.stderr}`);
});

test('the Java example reads the deprecated header format, skips an unreadable value, and stops uncommitted at a schema or a format it cannot read', { skip: SKIP, timeout: 10 * 60_000 }, async () => {
  const topic = 'java.formats';
  const confluentTopic = 'java.confluent';
  await ensureTopics(kafka, [topic, confluentTopic], { partitions: 1 });
  const current = knownSchemas().current('LinkedNote');
  await publish(kafka, topic, [
    await singleObject('fmt-single'),
    // What the previous release wrote: the Avro binary alone, the writer named by its SHA-256 header.
    { key: 'fmt-header', value: current.type.toBuffer(linkedRecord('fmt-header')), headers: { [SCHEMA_FINGERPRINT_HEADER]: current.fingerprint } },
    { key: 'fmt-garbage', value: Buffer.from('not avro at all') },
    await singleObject('fmt-before-newer'),
    // As a newer cuilink's LinkedNote schema (a fingerprint this build has never seen) reaches an older consumer.
    framed('fmt-newer', [0xc3, 0x01, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee]),
    await singleObject('fmt-after-newer'),
  ]);
  await publish(kafka, confluentTopic, [framed('fmt-confluent', [0, 0, 0, 0, 7])]);
  const args = (t: string) => ['--brokers', broker.brokers.join(','), '--topic', t, '--group', `group-${t}`, '--idle-exit-ms', '10000'];
  const stop = /stopped at java\.formats\/0@4: written with a schema this build does not know \(single-object fingerprint eeeeeeeeeeeeeeee\)/;

  const first = await runConsumer(args(topic));
  const tail = `\n--- stdout ---\n${first.stdout}\n--- stderr ---\n${first.stderr.slice(-3000)}`;
  assert.equal(first.code, 1, `exit 1: stopped at the record of an unknown schema${tail}`);
  assert.deepEqual(printed(first.stdout), ['fmt-single', 'fmt-header', 'fmt-before-newer'].map(line), tail);
  assert.match(first.stderr, /skipped java\.formats\/0@2: not a cuilink LinkedNote value/, tail);
  assert.match(first.stderr, stop, tail);

  // Nothing from the unknown record on was committed: a rerun of the same group starts at it again.
  const again = await runConsumer(args(topic));
  assert.equal(again.code, 1, again.stderr);
  assert.equal(again.stdout, '', `what was printed before is committed${again.stderr}`);
  assert.match(again.stderr, stop);

  const confluent = await runConsumer(args(confluentTopic));
  assert.equal(confluent.code, 1, confluent.stderr);
  assert.equal(confluent.stdout, '');
  assert.match(confluent.stderr, /stopped at java\.confluent\/0@0: in the Confluent wire format \(magic byte 0, schema id 7\)/, confluent.stderr);
});

test('the Java example ends with exit 3 and one line when no broker answers within --connect-timeout-ms, as the cuilink CLI does', { skip: SKIP, timeout: 5 * 60_000 }, async () => {
  // Nothing listens on port 1. The hang guard is far above the bounded wait: a consumer that retries for ever is killed by it.
  const run = await runConsumer(['--brokers', '127.0.0.1:1', '--topic', 'java.nowhere', '--connect-timeout-ms', '3000'], 120_000);
  const what = `\n--- stdout ---\n${run.stdout}\n--- stderr ---\n${run.stderr.slice(-3000)}`;
  assert.equal(run.code, 3, `exit 3${what}`);
  assert.equal(run.stdout, '', what);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one line, no retry warnings${what}`);
  assert.match(lines[0]!, /^cuilink-java-consumer: no broker of 127\.0\.0\.1:1 answered within 3000 ms \(--connect-timeout-ms\)/, what);
});

test('the Java example prints UTF-8 whatever the platform encoding (LC_ALL=C, file.encoding=ASCII)', { skip: SKIP, timeout: 10 * 60_000 }, async () => {
  const topic = 'java.utf8';
  await ensureTopics(kafka, [topic], { partitions: 1 });
  const noteId = 'nöte-Ω-✓';
  const record = linkedRecord(noteId);
  record.mentions[0] = { ...record.mentions[0]!, mentionId: 'mé1', conceptId: 'C:Größe' };
  const encoded = await codec.encode('LinkedNote', record);
  await publish(kafka, topic, [{ key: noteId, value: encoded.value, headers: encoded.headers }]);
  const run = await runConsumer(['--brokers', broker.brokers.join(','), '--topic', topic, '--group', 'java-utf8', '--max-notes', '1'], 120_000, {
    options: ['-Dfile.encoding=ANSI_X3.4-1968'],
    env: { LC_ALL: 'C', LANG: 'C' },
  });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(printed(run.stdout), [`${noteId}: mé1 -> C:Größe, m2 -> NIL`], run.stderr);
});
