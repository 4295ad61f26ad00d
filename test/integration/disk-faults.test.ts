import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { linkedNoteToAvro, PlainAvroCodec } from '../../src/stream/avro/index.ts';
import type { LinkedNote } from '../../src/link/types.ts';
import { goldMentionToAvro } from '../../src/eval/gold-avro.ts';
import { startKafkaEvaluator, type RunningKafkaEvaluator } from '../../src/eval/sidecar/kafka-evaluator.ts';
import { CuilinkError } from '../../src/kb/errors.ts';
import { fixtureOntology } from '../unit/eval/fixture-ontology.ts';
import { noteMessage, publish, waitFor, LUMP_MENTION, lumpNote } from '../support/stream-fixtures.ts';

// The long-running processes on a disk that refuses their writes, with the real broker and the
// real commands: an internal fault is never skipped or dead-lettered; the process says why in one
// line (no note text) and exits non-zero, and a restart resumes from what is on the disk.
const codec = new PlainAvroCodec();
const NOTES = 'df.notes';
const GOLD = 'df.gold';
const EVAL_LINKED = 'df.eval.linked';
const EVAL_GOLD = 'df.eval.gold';
let root: string;
let broker: LocalBroker;
let kafka: KafkaClient;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-disk-faults-'));
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'disk-faults-test', logLevel: 'error' });
  await ensureTopics(kafka, [NOTES, GOLD, EVAL_LINKED, EVAL_GOLD], { partitions: 1 });
});

after(async () => {
  await broker?.stop();
  rmSync(root, { recursive: true, force: true });
});

const MENTION = LUMP_MENTION;
const note = lumpNote;

test('memory updater: a final snapshot its disk refuses, at SIGTERM, ends it non-zero with a one-line reason (no stack trace, no note text)', async () => {
  const n = note('df-note-1');
  const m = n.mentions[0]!;
  const gold = await codec.encode('GoldMention', goldMentionToAvro({ noteId: n.noteId, mentionId: m.id, ids: ['HP:0000001'], label: 'Disease', start: m.start, end: m.end }, { annotatedAt: 1 }));
  // Each topic ends with a record that cannot be decoded: its "skipped" line says everything before it was read.
  await publish(kafka, NOTES, [await noteMessage(codec, n), { key: 'x', value: Buffer.from('not a record') }]);
  await publish(kafka, GOLD, [{ key: n.noteId, value: gold.value, headers: gold.headers }, { key: 'x', value: Buffer.from('not a record') }]);
  // The memory root cannot be created: a file holds its path (whoever runs the test; root ignores modes).
  const memory = join(root, 'memory');
  writeFileSync(memory, '');
  const child = spawn(process.execPath, ['bin/cuilink.js', 'memory', 'updater', '--memory', memory, '--learn-fraction', '1', '--notes-topic', NOTES, '--gold-topic', GOLD, '--group', 'df-updater', '--brokers', broker.brokers[0]!, '--flush-ms', '3600000', '--threads', '1'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await waitFor(() => /skipped df\.notes\[0\]@1/.test(stderr) && /skipped df\.gold\[0\]@1/.test(stderr), 180_000, `the updater to read both topics; stderr so far:\n${stderr}`);
    child.kill('SIGTERM');
    const code = await exited;
    assert.equal(code, 1, stderr);
    const lines = stderr.trim().split('\n');
    assert.doesNotMatch(stderr, /^\s+at /m, `no stack trace:\n${stderr}`);
    assert.match(lines.at(-1)!, /^memory-updater: final snapshot failed \(E[A-Z]+: [a-z]+ \S*memory\); exiting non-zero, a restart resumes from the memory on disk$/, stderr);
    assert.doesNotMatch(stderr, new RegExp(MENTION), 'no note text');
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
});

test('evaluator: a state write its disk refuses commits no offsets, and a restart once the disk has room scores every sample once', async () => {
  const dir = join(root, 'evaluator');
  mkdirSync(dir);
  const stateFile = join(dir, 'state.json');
  const linked: LinkedNote = {
    noteId: 'df-eval-1', linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 0,
    mentions: [{ mentionId: '0-3', start: 0, end: 3, label: 'Disease', conceptId: 'FIX:A1', conceptName: 'A1', semanticTypes: [], score: 0.9, confidence: null, via: 'dense', nil: false, reranked: false, candidates: [{ conceptId: 'FIX:A1', name: 'A1', semanticTypes: [], score: 0.9, retrievalScore: 0.9, exact: false, via: 'dense' }] }],
  };
  const gold = await codec.encode('GoldMention', goldMentionToAvro({ noteId: 'df-eval-1', mentionId: '0-3', ids: ['FIX:A1'], label: 'Disease', start: 0, end: 3 }, { annotatedAt: 1 }));
  const note = await codec.encode('LinkedNote', linkedNoteToAvro(linked));
  await publish(kafka, EVAL_GOLD, [{ key: 'df-eval-1', value: gold.value, headers: gold.headers }]);
  await publish(kafka, EVAL_LINKED, [{ key: 'df-eval-1', value: note.value, headers: note.headers }]);
  const start = () => startKafkaEvaluator(fixtureOntology, {
    kafka, codec, linkedTopic: EVAL_LINKED, goldTopic: EVAL_GOLD, groupId: 'df-evaluator', stateFile, snapshotIntervalMs: 3_600_000, port: 0, host: '127.0.0.1',
    joiner: { ttlMs: 3_600_000, maxPending: 100 }, windows: { lastN: 100, lastMs: 3_600_000 }, alerts: { minSamples: 1 }, log: () => {},
  });
  const committed = async () => {
    const admin = kafka.admin();
    try {
      return [(await admin.committedOffsets('df-evaluator', EVAL_LINKED))[0]!.offset, (await admin.committedOffsets('df-evaluator', EVAL_GOLD))[0]!.offset];
    } finally {
      await admin.close();
    }
  };
  const temporary = `${stateFile}.tmp-${process.pid}`;
  let running: RunningKafkaEvaluator | undefined = await start();
  try {
    await waitFor(() => running!.report().samplesScored === 1, 120_000, 'the evaluator to score the sample');
    // The kernel's own "no space left on device" for the state file's write.
    symlinkSync('/dev/full', temporary);
    const refused = (error: unknown) => error instanceof CuilinkError && error.code === 'STATE_WRITE_FAILED' && /ENOSPC/.test(error.message);
    await assert.rejects(running.checkpoint(), refused);
    assert.deepEqual(readdirSync(dir), [], 'no half-written state left beside it');
    symlinkSync('/dev/full', temporary); // the disk is still full at SIGTERM
    await assert.rejects(running.stop(), refused, 'the last checkpoint at stop fails the same way');
    running = undefined;
    assert.deepEqual(await committed(), ['-1', '-1'], 'no offsets committed past a state that is not on the disk');
    assert.equal(existsSync(stateFile), false);

    rmSync(temporary, { force: true });
    running = await start();
    await waitFor(() => running!.report().samplesScored === 1, 120_000, 'the restarted evaluator to score the sample again');
    await running.checkpoint();
    assert.deepEqual(await committed(), ['1', '1']);
    assert.equal(running.report().samplesScored, 1, 'counted once');
  } finally {
    rmSync(temporary, { force: true });
    await running?.stop();
  }
});
