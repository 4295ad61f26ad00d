// npm run bench:measure — is the measure stream's accuracy an honest estimate? (issue #25)
// NCBI-disease dev replayed through a real broker and stage (default linker, a memory learned from
// train's learn part, label selection on: learn requests and a random measure slice of notes);
// a simulated annotator (gold-sample --request-topic) answers both request topics; the sidecar
// evaluator, split like the memory updater, scores the measure stream. Its acc@1 must be within
// ±1 point of `cuilink eval` of the same notes with the same memory version. Also printed: the
// whole of dev offline, and the slice estimate's 95% interval. Writes bench/results/measure-stream.json.
//   --measure-fraction 0.25  --out FILE
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { BiEncoder } from '../src/encode/bi-encoder.ts';
import { goldSample } from '../src/cli/commands/gold-sample.ts';
import { startStageRuntime } from '../src/cli/stage-runtime.ts';
import { loadPubTatorCorpus } from '../src/eval/gold.ts';
import { kbOntologyView, loadIndexKb } from '../src/eval/kb-ontology-view.ts';
import { labelledMentionsFromPubTator } from '../src/eval/memory-sources.ts';
import { evaluateCorpus } from '../src/eval/offline-eval.ts';
import { startKafkaEvaluator } from '../src/eval/sidecar/kafka-evaluator.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { MemoryLearner, publishMemory } from '../src/link/memory-learner.ts';
import { openLinker } from '../src/link/open-linker.ts';
import { readIndexManifest } from '../src/retrieve/index-manifest.ts';
import { createRecordCodec } from '../src/stream/avro/create-record-codec.ts';
import { createKafkaClient } from '../src/stream/kafka-client.ts';
import { goldStream, MEMORY_SPLIT_SEED } from '../src/stream/label-selection/note-draw.ts';
import { startLocalBroker } from '../src/stream/local-broker.ts';
import { stageConfigSchema } from '../src/stream/stage-config.ts';
import { ensureTopics } from '../src/stream/topics.ts';
import { ensureBenchIndex } from './bench-index.ts';
import { MEDIC_KB_FLAGS, medicKb, requireBenchFiles } from './medic-kb.ts';

const SHARED = join('..', 'shared', 'data');
const { values } = parseArgs({
  options: {
    ...MEDIC_KB_FLAGS,
    'corpus-train': { type: 'string', default: join(SHARED, 'ncbi-disease', 'NCBItrainset_corpus.txt') },
    corpus: { type: 'string', default: join(SHARED, 'ncbi-disease', 'NCBIdevelopset_corpus.txt') },
    'measure-fraction': { type: 'string', default: '0.25' },
    out: { type: 'string', default: join('bench', 'results', 'measure-stream.json') },
  },
});
const medic = medicKb(values);
requireBenchFiles('bench:measure', [...medic.files, values['corpus-train'], values.corpus]);
const measureFraction = Number(values['measure-fraction']);
const { indexDir } = ensureBenchIndex({ ...medic, modelDir: DEFAULT_MODEL_DIR, log: console.log });
const view = kbOntologyView(await loadIndexKb(indexDir));
const work = mkdtempSync(join(tmpdir(), 'cuilink-bench-measure-'));
const broker = await startLocalBroker();
const kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'bench-measure', logLevel: 'error' });
const codec = createRecordCodec();

try {
  // A memory learned from train's learn part: the stage, the evaluator's notes and the offline eval share this version.
  const memoryRoot = join(work, 'memory');
  const encoder = await BiEncoder.open(readIndexManifest(indexDir).model.path, { provider: 'cpu' });
  const learner = new MemoryLearner(encoder);
  const store = learner.openOrCreate(memoryRoot);
  await learner.add(store, await labelledMentionsFromPubTator(values['corpus-train'], { split: 'learn' }));
  const memoryVersion = publishMemory(store, memoryRoot);
  await encoder.close();

  const topics = { input: 'notes', output: 'linked', deadLetter: 'dead', labelRequests: 'asks', measureRequests: 'measure' };
  await ensureTopics(kafka, [...Object.values(topics), 'gold'], { partitions: 2 });
  const config = stageConfigSchema.parse({
    brokers: broker.brokers, groupId: 'bench-measure', topics,
    labels: { measureFraction, windowMs: 1000, budget: 50 },
    http: { enabled: false }, telemetry: { prometheus: false, logLevel: 'warn', kafkaLogLevel: 'nothing' },
    linker: { indexDir, memoryDir: memoryRoot, provider: 'cpu' },
  });
  const runtime = await startStageRuntime(config, { logSink: () => {} });
  await runtime.stage.whenJoined();
  const evaluator = await startKafkaEvaluator(view, {
    kafka, codec, linkedTopic: 'linked', goldTopic: 'gold', groupId: 'bench-measure-evaluator', stateFile: join(work, 'state.json'), snapshotIntervalMs: 1000, port: 0, host: '127.0.0.1',
    joiner: { ttlMs: 3_600_000, maxPending: 1_000_000 }, windows: { lastN: 1_000_000, lastMs: 3_600_000 }, alerts: { minSamples: 1 },
    measure: { learnFraction: 1 - measureFraction, seed: MEMORY_SPLIT_SEED }, log: () => {},
  });

  const corpus = await loadPubTatorCorpus(values.corpus);
  const brokers = ['--brokers', broker.brokers.join(',')];
  if ((await goldSample.run(['--corpus', values.corpus, '--fraction', '0', '--gold-topic', 'gold', '--notes-topic', 'notes', ...brokers])) !== 0) throw new Error('publishing the notes failed');
  const waitFor = async (done: () => boolean, what: string) => {
    const deadline = Date.now() + 15 * 60_000;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  await waitFor(() => evaluator.report().notesSeen >= corpus.notes.length, 'every note linked');
  // One more delivery after the window closes would send the learn requests; the measure slice went out with its notes.
  const measureNotes = new Set(corpus.notes.filter((n) => goldStream(n.noteId, 1 - measureFraction, MEMORY_SPLIT_SEED) === 'measure').map((n) => n.noteId));
  const measureMentions = [...corpus.gold.values()].filter((g) => measureNotes.has(g.noteId)).length;
  await waitFor(() => (runtime.stage.stats().counts.labelRequests['measure'] ?? 0) >= measureMentions, 'the measure requests');
  // The learn window closes on the stage's timer (the stream is idle by now): wait for its requests too.
  await waitFor(() => (runtime.stage.stats().counts.labelRequests['learn'] ?? 0) > 0, 'the learn requests');
  await new Promise((r) => setTimeout(r, 2000));
  const asked = { ...runtime.stage.stats().counts.labelRequests };
  for (const topic of ['measure', 'asks']) if ((await goldSample.run(['--corpus', values.corpus, '--request-topic', topic, '--gold-topic', 'gold', ...brokers])) !== 0) throw new Error(`answering ${topic} failed`);
  await waitFor(() => {
    const r = evaluator.report();
    return r.samplesScored >= measureMentions && r.goldByStream.learn >= (asked['learn'] ?? 0);
  }, 'the answers read by the evaluator');
  const report = evaluator.report();
  await evaluator.stop();
  const requests = asked;
  await runtime.close();

  // Offline, the same memory version: the measure slice's notes, and all of dev.
  const linker = await openLinker({ indexDir, provider: 'cpu', memoryDir: memoryRoot, memoryPollMs: 0 });
  if (linker.versions.memoryVersion !== memoryVersion) throw new Error('the offline linker loaded another memory version');
  const slice = { ...corpus, notes: corpus.notes.filter((n) => measureNotes.has(n.noteId)), gold: new Map([...corpus.gold].filter(([, g]) => measureNotes.has(g.noteId))) };
  const offlineSlice = (await evaluateCorpus(linker, slice, view)).metrics.overall;
  const offlineAll = (await evaluateCorpus(linker, corpus, view)).metrics.overall;
  await linker.close();

  const streamed = report.windows.count.overall;
  const n = report.samplesScored;
  const p = streamed.acc1 ?? NaN;
  const half = 1.96 * Math.sqrt((p * (1 - p)) / n);
  const diff = p - (offlineSlice.acc1 ?? NaN);
  const bar = { rule: 'measure-stream acc@1 within ±0.01 of cuilink eval of the same notes, same memory version', met: Math.abs(diff) <= 0.01 };
  console.log(`measure stream (${measureNotes.size} notes, ${n} mentions scored; gold by stream ${JSON.stringify(report.goldByStream)}): acc@1 ${p.toFixed(4)} ± ${half.toFixed(4)} (95%)`);
  console.log(`cuilink eval, the same notes and memory ${memoryVersion}: acc@1 ${offlineSlice.acc1?.toFixed(4)} (difference ${diff.toFixed(4)}); all of dev: ${offlineAll.acc1?.toFixed(4)}`);
  console.log(`bar: ${bar.rule}: ${bar.met ? 'MET' : 'NOT MET'}`);
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify({
    benchmark: 'bench:measure', date: new Date().toISOString(), corpus: values.corpus, index: indexDir, memory: { from: `${values['corpus-train']} learn part`, version: memoryVersion }, measureFraction, splitSeed: MEMORY_SPLIT_SEED,
    labelRequests: requests, evaluator: { samplesScored: n, goldByStream: report.goldByStream, learnPredictionsDropped: report.learnPredictionsDropped, acc1: p, acc5: streamed.acc5, mrr: streamed.mrr, ci95: [p - half, p + half], byMemoryVersion: report.byMemoryVersion },
    offline: { sameNotes: offlineSlice, allNotes: offlineAll }, difference: diff, bar,
  }, null, 2)}\n`);
  console.log(`wrote ${values.out}`);
  process.exitCode = bar.met ? 0 : 1;
} finally {
  await broker.stop();
  rmSync(work, { recursive: true, force: true });
}
