import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { buildIndexFromKb } from '../../src/link/build-index-from-kb.ts';
import { openLinker } from '../../src/link/open-linker.ts';
import type { LinkedNote, LinkingCore } from '../../src/link/types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { linkedNoteToAvro, PlainAvroCodec } from '../../src/stream/avro/index.ts';
import { loadPubTatorCorpus, type GoldCorpus, type GoldMention } from '../../src/eval/gold.ts';
import { goldMentionToAvro } from '../../src/eval/gold-avro.ts';
import { inGoldSample } from '../../src/eval/gold-sampling.ts';
import { kbOntologyView, loadIndexKb } from '../../src/eval/kb-ontology-view.ts';
import type { OntologyView } from '../../src/eval/metrics/ontology-view.ts';
import { evaluateCorpus } from '../../src/eval/offline-eval.ts';
import { startKafkaEvaluator, type RunningKafkaEvaluator } from '../../src/eval/sidecar/kafka-evaluator.ts';
import { loadStageConfig } from '../../src/stream/stage-config.ts';
import { startStageRuntime } from '../../src/cli/stage-runtime.ts';
import type { SidecarReport } from '../../src/eval/sidecar/sidecar-evaluator.ts';

// The real broker, the real default ONNX bi-encoder over a real index of a fixture KB, the
// real `cuilink gold-sample` and `cuilink evaluator` commands.
const CORPUS = 'test/fixtures/eval/stream-sample.PubTator';
const FRACTION = 0.5;
const SEED = 3;
const codec = new PlainAvroCodec();
let root: string;
let indexDir: string;
let broker: LocalBroker;
let kafka: KafkaClient;
let linker: LinkingCore;
let corpus: GoldCorpus;
let view: OntologyView;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-evaluator-'));
  indexDir = join(root, 'index');
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'evaluator-test', logLevel: 'error' });
  await buildIndexFromKb({ kbPaths: ['test/fixtures/eval/mini-kb.jsonl'], modelDir: 'models/default/biencoder', outDir: indexDir, provider: 'cpu', threads: 1, progress: false });
  linker = await openLinker({ indexDir, provider: 'cpu', threads: 1, rerankerDir: false });
  corpus = await loadPubTatorCorpus(CORPUS);
  view = kbOntologyView(await loadIndexKb(indexDir));
});

after(async () => {
  await linker?.close();
  await broker?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function publishLinked(topic: string, notes: LinkedNote[]): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  const messages = await Promise.all(notes.map(async (n) => ({ key: n.noteId, ...(await codec.encode('LinkedNote', linkedNoteToAvro(n))) })));
  await producer.send([{ topic, messages }]);
  await producer.close();
}

async function publishGold(topic: string, gold: GoldMention[]): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  const messages = await Promise.all(gold.map(async (g) => ({ key: g.noteId, ...(await codec.encode('GoldMention', goldMentionToAvro(g, { annotatedAt: 1 }))) })));
  await producer.send([{ topic, messages }]);
  await producer.close();
}

async function waitFor<T>(what: string, probe: () => Promise<T> | T, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await probe();
  while (!done(last)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)?.slice(0, 400)}`);
    await new Promise((r) => setTimeout(r, 200));
    last = await probe();
  }
  return last;
}

function goldSampleCli(args: string[]): string {
  const run = spawnSync(process.execPath, ['bin/cuilink.js', 'gold-sample', '--brokers', broker.brokers[0]!, ...args], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout;
}

/**
 * An evaluator in this process on `<name>.linked` and `<name>.gold`, its group and state file named
 * for `name`. By default unmatched records wait an hour and the count window holds 10 000 samples,
 * more than any test here sends.
 */
function startEvaluator(name: string, tuning: { snapshotIntervalMs?: number; ttlMs?: number; lastN?: number } = {}): Promise<RunningKafkaEvaluator> {
  return startKafkaEvaluator(view, {
    kafka,
    codec,
    linkedTopic: `${name}.linked`,
    goldTopic: `${name}.gold`,
    groupId: `${name}-evaluator`,
    stateFile: join(root, `${name}-state.json`),
    snapshotIntervalMs: tuning.snapshotIntervalMs ?? 200,
    port: 0,
    host: '127.0.0.1',
    joiner: { ttlMs: tuning.ttlMs ?? 3_600_000, maxPending: 10_000 },
    windows: { lastN: tuning.lastN ?? 10_000, lastMs: 3_600_000 },
    alerts: { minSamples: 1 },
    log: () => {},
  });
}

/** The sampled part of the corpus: what the evaluator should end up scoring. */
function sampledCorpus(): GoldCorpus {
  const notes = corpus.notes.filter((n) => inGoldSample(n.noteId, FRACTION, SEED));
  const gold = new Map([...corpus.gold].filter(([, g]) => inGoldSample(g.noteId, FRACTION, SEED)));
  return { notes, gold, stats: corpus.stats };
}

test("the evaluator's acc@1, acc@5, MRR (and every other metric) over a sampled corpus equal offline eval's on the same mentions", async () => {
  await ensureTopics(kafka, ['eq.linked', 'eq.gold'], { partitions: 2 });
  const out = goldSampleCli(['--corpus', CORPUS, '--fraction', String(FRACTION), '--seed', String(SEED), '--gold-topic', 'eq.gold']);
  const sampled = sampledCorpus();
  assert.ok(sampled.notes.length > 0 && sampled.notes.length < corpus.notes.length, `a real sample: ${sampled.notes.length} of ${corpus.notes.length}`);
  assert.match(out, new RegExp(`${corpus.notes.length} annotated notes, ${sampled.notes.length} sampled .* ${sampled.gold.size} gold mentions → eq\\.gold`));
  // The stream carries every note's output; only the sampled ones have gold. The int8 model's
  // activation quantization is per batch, so scores depend on batch composition: the sampled
  // notes are linked as the one batch offline eval links them in, so both see the same predictions.
  const unsampled = corpus.notes.filter((n) => !inGoldSample(n.noteId, FRACTION, SEED));
  assert.ok(sampled.notes.length <= 32, 'offline eval links the sample in one batch of 32');
  await publishLinked('eq.linked', [...(await linker.linkNotes(unsampled)), ...(await linker.linkNotes(sampled.notes))]);

  const running = await startEvaluator('eq');
  try {
    const report = await waitFor('every sampled gold mention joined', () => running.report(), (r) => r.samplesScored >= sampled.gold.size && r.notesSeen >= corpus.notes.length);
    assert.equal(report.samplesScored, sampled.gold.size);
    const offline = await evaluateCorpus(linker, sampled, view);
    assert.equal(offline.mentions, sampled.gold.size);
    const streamed = report.windows.count;
    assert.deepEqual(streamed.overall, offline.metrics.overall);
    assert.deepEqual(streamed.byLabel, offline.metrics.byLabel);
    assert.deepEqual(streamed.bySemanticType, offline.metrics.bySemanticType);
    assert.deepEqual(report.windows.time.overall, offline.metrics.overall);
    // Not a trivial corpus: the linker is wrong on some mentions.
    assert.ok(offline.metrics.overall.acc1! > 0 && offline.metrics.overall.acc1! < 1, `acc@1 ${offline.metrics.overall.acc1}`);
    // Predictions of unsampled notes wait for gold that never comes.
    const unsampledMentions = unsampled.reduce((s, n) => s + n.mentions.length, 0);
    assert.equal(report.join.pendingPredictions, unsampledMentions);
    assert.equal(report.join.pendingGold, 0);
    const metrics = await (await fetch(`${running.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`cuilink_eval_acc1\\{window="count",by="overall",group="all"\\} ${offline.metrics.overall.acc1}`));
    assert.deepEqual(running.skipped(), {});
  } finally {
    await running.stop();
  }
});

interface EvaluatorProcess {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

async function startEvaluatorCli(args: string[]): Promise<EvaluatorProcess> {
  const child = spawn(process.execPath, ['bin/cuilink.js', 'evaluator', '--brokers', broker.brokers[0]!, '--index', indexDir, '--port', '0', '--host', '127.0.0.1', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await waitFor('the evaluator to print its URL', () => /report at (http:\/\/[^/\s]+)\/report/.exec(stderr)?.[1], (u) => u !== undefined || child.exitCode !== null, 60_000);
  assert.ok(url !== undefined, `evaluator exited: ${stderr}`);
  return { child, url, stderr: () => stderr };
}

async function fetchReport(url: string): Promise<SidecarReport> {
  return (await (await fetch(`${url}/report`)).json()) as SidecarReport;
}

async function sigterm(proc: EvaluatorProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => proc.child.once('exit', (code) => resolve(code)));
  proc.child.kill('SIGTERM');
  return exited;
}

test('cuilink evaluator keeps its window across a restart (SIGTERM → state file → restore) and resumes from committed offsets', async () => {
  await ensureTopics(kafka, ['rs.linked', 'rs.gold'], { partitions: 1 });
  const [first, second, third] = corpus.notes as [(typeof corpus.notes)[0], (typeof corpus.notes)[0], (typeof corpus.notes)[0]];
  const goldOf = (noteId: string) => [...corpus.gold.values()].filter((g) => g.noteId === noteId);
  await publishGold('rs.gold', [...goldOf(first.noteId), ...goldOf(second.noteId)]);
  await publishLinked('rs.linked', await linker.linkNotes([first, second]));
  const stateFile = join(root, 'rs-state.json');
  const args = ['--linked-topic', 'rs.linked', '--gold-topic', 'rs.gold', '--group', 'rs-evaluator', '--state', stateFile, '--snapshot-seconds', '0.2'];
  const expectedFirst = goldOf(first.noteId).length + goldOf(second.noteId).length;

  const one = await startEvaluatorCli(args);
  const before = await waitFor('the first two notes scored', () => fetchReport(one.url), (r) => r.samplesScored === expectedFirst);
  assert.equal(await sigterm(one), 0, one.stderr());
  assert.ok(existsSync(stateFile));
  assert.equal((JSON.parse(readFileSync(stateFile, 'utf8')) as { samplesScored: number }).samplesScored, expectedFirst);

  const two = await startEvaluatorCli(args);
  try {
    assert.match(two.stderr(), new RegExp(`restored .*: ${expectedFirst} samples in the count window`));
    const restored = await fetchReport(two.url);
    assert.deepEqual(restored.windows.count.overall, before.windows.count.overall);
    // New records only: had it re-read the topics from the start, the first notes would be scored twice.
    await publishGold('rs.gold', goldOf(third.noteId));
    await publishLinked('rs.linked', await linker.linkNotes([third]));
    const expected = expectedFirst + goldOf(third.noteId).length;
    const after = await waitFor('the third note scored', () => fetchReport(two.url), (r) => r.samplesScored >= expected);
    await new Promise((r) => setTimeout(r, 1000));
    const settled = await fetchReport(two.url);
    assert.equal(settled.samplesScored, expected);
    assert.equal(settled.windows.count.overall.n, expected);
    assert.equal(settled.join.goldReplaced + settled.join.predictionsReplaced, 0);
    assert.equal(after.goldSeen, expected);
  } finally {
    assert.equal(await sigterm(two), 0, two.stderr());
  }
});

test('unmatched gold and predictions expire after the TTL and are counted', async () => {
  await ensureTopics(kafka, ['ex.linked', 'ex.gold'], { partitions: 1 });
  const [goldOnly, predictionOnly] = corpus.notes.slice(3, 5) as [(typeof corpus.notes)[0], (typeof corpus.notes)[0]];
  const gold = [...corpus.gold.values()].filter((g) => g.noteId === goldOnly.noteId);
  await publishGold('ex.gold', gold);
  await publishLinked('ex.linked', await linker.linkNotes([predictionOnly]));
  const running = await startEvaluator('ex', { snapshotIntervalMs: 100, ttlMs: 1500, lastN: 100 });
  try {
    const seen = await waitFor('both topics read', () => running.report(), (r) => r.goldSeen === gold.length && r.notesSeen === 1);
    assert.equal(seen.join.pendingGold + seen.join.goldExpired, gold.length);
    const expired = await waitFor('the TTL to pass', () => running.report(), (r) => r.join.pendingGold === 0 && r.join.pendingPredictions === 0, 20_000);
    assert.equal(expired.join.goldExpired, gold.length);
    assert.equal(expired.join.predictionsExpired, predictionOnly.mentions.length);
    assert.equal(expired.join.joined, 0);
    assert.equal(expired.samplesScored, 0);
    const metrics = await (await fetch(`${running.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`cuilink_eval_join_total\\{outcome="gold_expired"\\} ${gold.length}`));
  } finally {
    await running.stop();
  }
});

test('through the real stage: notes published by gold-sample, linked by `cuilink run`\'s runtime, scored by the evaluator = offline eval (acc@1, acc@5, MRR to 3 decimals)', async () => {
  // fp16: its scores do not depend on how the stage's micro-batches happen to be cut (int8's do).
  const open = () => openLinker({ indexDir, provider: 'cpu', threads: 1, rerankerDir: false, precision: 'fp16' });
  const topics = { input: 'st.notes', output: 'st.linked', deadLetter: 'st.dead-letter' };
  await ensureTopics(kafka, [...Object.values(topics), 'st.gold'], { partitions: 2 });
  const config = loadStageConfig({ env: {}, overrides: { brokers: broker.brokers, groupId: 'st-stage', topics, 'http.enabled': false, 'telemetry.prometheus': false, 'telemetry.logLevel': 'error' } });
  const logs: string[] = [];
  const runtime = await startStageRuntime(config, { brokers: broker.brokers, openCore: open, logSink: (line) => logs.push(line) });
  const running = await startEvaluator('st');
  try {
    const out = goldSampleCli(['--corpus', CORPUS, '--fraction', String(FRACTION), '--seed', String(SEED), '--gold-topic', 'st.gold', '--notes-topic', topics.input]);
    assert.match(out, new RegExp(`${corpus.notes.length} notes → ${topics.input.replace('.', '\\.')}`));
    const sampled = sampledCorpus();
    const report = await waitFor('the stage to link every note and the evaluator to score the sample', () => running.report(), (r) => r.notesSeen >= corpus.notes.length && r.samplesScored >= sampled.gold.size, 120_000);
    assert.equal(report.notesSeen, corpus.notes.length, 'every note linked once');
    assert.equal(report.samplesScored, sampled.gold.size);
    const offlineLinker = await open();
    const offline = await evaluateCorpus(offlineLinker, sampled, view);
    await offlineLinker.close();
    for (const metric of ['acc1', 'acc5', 'mrr', 'nilRate', 'similarity', 'ndcg5'] as const) {
      assert.equal(report.windows.count.overall[metric]!.toFixed(3), offline.metrics.overall[metric]!.toFixed(3), metric);
    }
    assert.equal(report.windows.count.overall.n, offline.metrics.overall.n);
  } finally {
    await running.stop();
    await runtime.close();
  }
});
