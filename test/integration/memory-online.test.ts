import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { BiEncoder } from '../../src/encode/bi-encoder.ts';
import { buildIndexFromKb } from '../../src/link/build-index-from-kb.ts';
import { openLinker } from '../../src/link/open-linker.ts';
import { MemoryLearner } from '../../src/link/memory-learner.ts';
import type { LinkedNote, NoteInput } from '../../src/link/types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { avroToLinkedNote, PlainAvroCodec } from '../../src/stream/avro/index.ts';
import { loadStageConfig } from '../../src/stream/stage-config.ts';
import { startStageRuntime, type StageRuntime } from '../../src/cli/stage-runtime.ts';
import { goldMentionToAvro } from '../../src/eval/gold-avro.ts';
import { MemoryUpdater } from '../../src/eval/memory-updater.ts';
import { goldStream } from '../../src/eval/gold-sampling.ts';
import { kbOntologyView, loadIndexKb } from '../../src/eval/kb-ontology-view.ts';
import { startKafkaEvaluator, type RunningKafkaEvaluator } from '../../src/eval/sidecar/kafka-evaluator.ts';
import { readFileSync } from 'node:fs';
import { noteMessage, publish, TopicCollector, waitFor, LUMP_MENTION, lumpNote } from '../support/stream-fixtures.ts';

// The real broker, the real default ONNX bi-encoder over a real index of a fixture KB, the real
// stage and the real memory updater: notes are linked, gold arrives on the gold topic, the memory
// updates and the running stage links later notes with the same mention right, without a restart.
const codec = new PlainAvroCodec();
const TOPICS = { input: 'mo.notes', output: 'mo.linked', deadLetter: 'mo.dead' };
const GOLD_TOPIC = 'mo.gold';
let root: string;
let broker: LocalBroker;
let kafka: KafkaClient;
let runtime: StageRuntime | undefined;
let updater: MemoryUpdater | undefined;
let encoder: BiEncoder | undefined;
let evaluator: RunningKafkaEvaluator | undefined;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-memory-online-'));
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'memory-online-test', logLevel: 'error' });
  await ensureTopics(kafka, [TOPICS.input, TOPICS.output, TOPICS.deadLetter, GOLD_TOPIC], { partitions: 1 });
  await buildIndexFromKb({ kbPaths: ['test/fixtures/eval/mini-kb.jsonl'], modelDir: 'models/default/biencoder', outDir: join(root, 'index'), provider: 'cpu', threads: 1, progress: false });
});

after(async () => {
  await updater?.stop().catch(() => {});
  await evaluator?.stop().catch(() => {});
  await runtime?.close().catch(() => {});
  await encoder?.close();
  await broker?.stop();
  rmSync(root, { recursive: true, force: true });
});

const MENTION = LUMP_MENTION;
const note = lumpNote;

async function publishGold(n: NoteInput, ids: string[]): Promise<void> {
  const m = n.mentions[0]!;
  const gold = await codec.encode('GoldMention', goldMentionToAvro({ noteId: n.noteId, mentionId: m.id, ids, label: 'Disease', start: m.start, end: m.end }, { annotatedAt: 1 }));
  await publish(kafka, GOLD_TOPIC, [{ key: n.noteId, value: gold.value, headers: gold.headers }]);
}

const LEARN_FRACTION = 0.5;
const idIn = (stream: 'learn' | 'measure', prefix: string, from = 0): string => {
  for (let k = from; ; k++) if (goldStream(`${prefix}-${k}`, LEARN_FRACTION) === stream) return `${prefix}-${k}`;
};

test('gold on the gold topic reaches the memory, a running stage links later notes with it (no restart), and measure-stream accuracy rises', async () => {
  const memoryRoot = join(root, 'memory');
  const config = loadStageConfig({ env: {}, overrides: { brokers: broker.brokers, groupId: 'mo-stage', topics: TOPICS, 'http.enabled': false, 'telemetry.prometheus': false, 'telemetry.logLevel': 'info' } });
  const logs: string[] = [];
  runtime = await startStageRuntime(config, {
    brokers: broker.brokers,
    logSink: (line) => logs.push(line),
    openCore: (memoryEvents) => openLinker({ indexDir: join(root, 'index'), provider: 'cpu', threads: 1, rerankerDir: false, memoryDir: memoryRoot, memoryPollMs: 100, ...memoryEvents }),
  });
  evaluator = await startKafkaEvaluator(kbOntologyView(await loadIndexKb(join(root, 'index'))), {
    kafka, codec, linkedTopic: TOPICS.output, goldTopic: GOLD_TOPIC, groupId: 'mo-evaluator', stateFile: join(root, 'evaluator-state.json'), snapshotIntervalMs: 200,
    port: 0, host: '127.0.0.1', joiner: { ttlMs: 3_600_000, maxPending: 10_000 }, windows: { lastN: 10_000, lastMs: 3_600_000 }, alerts: { minSamples: 1 },
    measure: { learnFraction: LEARN_FRACTION }, log: () => {},
  });
  const linked = new TopicCollector(kafka, TOPICS.output);
  await linked.start();
  const decoded = new Map<string, LinkedNote>();
  const linkedNote = async (id: string): Promise<LinkedNote> => {
    await waitFor(async () => {
      for (const r of linked.records) if (!decoded.has(r.key!)) decoded.set(r.key!, avroToLinkedNote(await codec.decode('LinkedNote', r.value, r.headers)));
      return decoded.has(id);
    }, 60_000, `linked output of ${id}`);
    return decoded.get(id)!;
  };

  // 1. Before any gold: no memory; a learn-stream note and a measure-stream note with the invented surface.
  const learnNote = note(idIn('learn', 'note'));
  const measureFirst = note(idIn('measure', 'note'));
  await publish(kafka, TOPICS.input, [await noteMessage(codec, learnNote), await noteMessage(codec, measureFirst)]);
  const before = (await linkedNote(learnNote.noteId)).mentions[0]!;
  // The coder's label: a fixture-KB concept the linker did not pick.
  const kbIds = readFileSync('test/fixtures/eval/mini-kb.jsonl', 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id);
  const TARGET = kbIds.find((id) => id !== before.conceptId)!;
  assert.equal((await linkedNote(learnNote.noteId)).memoryVersion ?? null, null);
  assert.equal(before.memoryDecided, false);
  assert.notEqual((await linkedNote(measureFirst.noteId)).mentions[0]!.conceptId, TARGET);
  // The measure note's gold is scored (wrong), never learned.
  await publishGold(measureFirst, [TARGET]);
  await waitFor(() => evaluator!.report().samplesScored === 1, 60_000, 'the first measure-stream sample');
  assert.equal(evaluator.report().windows.count.overall.acc1, 0);

  // 2. The updater learns the learn-stream note's gold (and skips the measure note's).
  encoder = await BiEncoder.open('models/default/biencoder', { provider: 'cpu', threads: 1 });
  updater = new MemoryUpdater({ kafka, codec, notesTopic: TOPICS.input, goldTopic: GOLD_TOPIC, groupId: 'mo-updater', root: memoryRoot, learner: new MemoryLearner(encoder), learnFraction: LEARN_FRACTION, flushMs: 100, log: () => {} });
  await updater.start();
  await publishGold(learnNote, [TARGET]);
  await waitFor(() => updater!.stats.version !== undefined, 60_000, 'the first memory snapshot');
  assert.equal(updater.stats.learned, 1);
  assert.equal(updater.stats.measureSkipped, 1);

  // 3. Later measure-stream notes with the same mention: once the stage has swapped (it polls CURRENT), they link to the target.
  let after: LinkedNote | undefined;
  let afterNote: NoteInput | undefined;
  for (let i = 0; i < 40 && after?.memoryVersion == null; i++) {
    afterNote = note(idIn('measure', `after${i}`));
    await publish(kafka, TOPICS.input, [await noteMessage(codec, afterNote)]);
    after = await linkedNote(afterNote.noteId);
  }
  assert.equal(after!.memoryVersion, updater.stats.version);
  assert.equal(after!.mentions[0]!.conceptId, TARGET);
  assert.equal(after!.mentions[0]!.memoryDecided, true);
  assert.equal(runtime.linker.versions.memoryVersion, updater.stats.version);
  // The stage said so: one line per swap, with the version and no text, and counted.
  const swapLines = logs.map((l) => JSON.parse(l) as { message: string; memoryVersion?: string }).filter((l) => l.message === 'memory swapped');
  assert.equal(swapLines.length, runtime.memory.counts.swaps);
  assert.ok(runtime.memory.counts.swaps >= 1);
  assert.equal(swapLines.at(-1)!.memoryVersion, updater.stats.version);
  assert.ok(!logs.some((l) => l.includes(MENTION)), 'no mention text in the stage log');
  assert.equal(runtime.memory.counts.loadFailures, 0);

  // 4. Its gold: the measure-stream accuracy rises (0 → 1/2), with the memory version on the report; the learned note was never scored.
  await publishGold(afterNote!, [TARGET]);
  await waitFor(() => evaluator!.report().samplesScored === 2, 60_000, 'the second measure-stream sample');
  const report = evaluator.report();
  assert.equal(report.windows.count.overall.acc1, 0.5);
  assert.equal(report.learnSkipped, 1);
  assert.equal(report.memoryVersion, updater.stats.version);
  // What each stream took, and what the memory gained: 0/1 without it, 1/1 with its version.
  assert.deepEqual(report.goldByStream, { learn: 1, measure: 2 });
  assert.ok(report.learnPredictionsDropped >= 1, 'the learn-stream note was never pending');
  assert.deepEqual(report.byMemoryVersion.noMemory, { n: 1, acc1: 0 });
  assert.deepEqual(report.byMemoryVersion.versions.map((v) => [v.memoryVersion, v.n, v.acc1]), [[updater.stats.version, 1, 1]]);
  await linked.stop();
});
