// examples/java-consumer (Apache Kafka's Java client + Avro's own BinaryMessageDecoder, no cuilink
// code) built with Maven and run against an exactly-once stage on the real local broker: it reads
// every LinkedNote the stage wrote (read_committed) and prints, for each mention, the concept id
// cuilink's own reader sees; a LinkedNote written with an older schema (v2) is read with defaults.
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
import { avroToLinkedNote, createRecordCodec, knownSchemas, linkedNoteToAvro } from '../../src/stream/avro/index.ts';
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
let indexDir: string;
let stage: StageProcess | undefined;
const codec = createRecordCodec();

before(async () => {
  if (SKIP) return;
  root = mkdtempSync(join(tmpdir(), 'cuilink-java-consumer-'));
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'java-consumer-test', logLevel: 'nothing' });
  indexDir = await buildPhenotypeIndex(join(root, 'index'));
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

/** Runs the consumer until it has printed `maxNotes` notes (or gave up after a minute without records). */
function runConsumer(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('java', ['-jar', JAR, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      stderr += `\n[test] no exit within ${timeoutMs} ms: killed\n`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The line the example prints for a note: `n-0001: m1 -> HP:0001250, m2 -> NIL`. */
function expectedLine(note: LinkedNote): string {
  return `${note.noteId}:${note.mentions.map((m, i) => `${i === 0 ? ' ' : ', '}${m.mentionId} -> ${m.conceptId ?? 'NIL'}`).join('')}`;
}

test('the Java example (kafka-clients + Avro BinaryMessageDecoder) reads every LinkedNote of an exactly-once stage, older schema versions included', { skip: SKIP, timeout: 15 * 60_000 }, async (ctx) => {
  const build = buildExample();
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
