// npm run bench:evaluator — the bar of issue 5: NCBI-disease dev replayed through the Kafka stage
// with 100% gold sampling; the sidecar evaluator's acc@1, acc@5 and MRR must equal `cuilink
// eval`'s to the third decimal. Real broker, real stage (`cuilink run`'s runtime), real ONNX
// bi-encoder over a MEDIC index. Prints both and writes bench/results/evaluator-bar.json.
//   --kb FILE --corpus FILE --model DIR --index DIR (reuse) --precision int8,fp16 --out FILE
// Each precision runs stage and offline eval with the same model file. The int8 model quantizes
// activations per batch; the linker batches each note's mentions on their own, so int8 results do
// not depend on how the stage's micro-batches or eval's 32-note batches group the notes.
import { ensureBenchIndex } from './bench-index.ts';
import { MEDIC_KB_FLAGS, medicKb } from './medic-kb.ts';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadPubTatorCorpus } from '../src/eval/gold.ts';
import { checkGoldCorpus, publishGoldSample } from '../src/eval/gold-publisher.ts';
import { kbOntologyView, loadIndexKb } from '../src/eval/kb-ontology-view.ts';
import { evaluateCorpus } from '../src/eval/offline-eval.ts';
import { startKafkaEvaluator } from '../src/eval/sidecar/kafka-evaluator.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { openLinker } from '../src/link/open-linker.ts';
import type { Precision } from '../src/encode/manifest.ts';
import { startStageRuntime } from '../src/cli/stage-runtime.ts';
import { createRecordCodec } from '../src/stream/avro/create-record-codec.ts';
import { createKafkaClient } from '../src/stream/kafka-client.ts';
import { startLocalBroker } from '../src/stream/local-broker.ts';
import { loadStageConfig } from '../src/stream/stage-config.ts';
import { ensureTopics } from '../src/stream/topics.ts';

const SHARED = join('..', 'shared', 'data');
const { values } = parseArgs({
  options: {
    ...MEDIC_KB_FLAGS,
    corpus: { type: 'string', default: join(SHARED, 'ncbi-disease', 'NCBIdevelopset_corpus.txt') },
    model: { type: 'string', default: DEFAULT_MODEL_DIR },
    index: { type: 'string' },
    precision: { type: 'string', default: 'int8,fp16' },
    out: { type: 'string', default: join('bench', 'results', 'evaluator-bar.json') },
  },
});
const medic = medicKb(values);
for (const file of [...medic.files, values.corpus]) {
  if (!existsSync(file)) {
    console.error(`bench:evaluator: ${file} not found (the benchmark needs ../shared/data)`);
    process.exit(2);
  }
}

// The same cached MEDIC index as bench:link.
const { indexDir } = ensureBenchIndex({ ...medic, modelDir: values.model, indexDir: values.index, log: console.log });

const precisions = values.precision.split(',').map((p) => p.trim()) as Precision[];
for (const p of precisions) {
  if (!['int8', 'fp16', 'fp32'].includes(p)) {
    console.error(`bench:evaluator: --precision must list int8, fp16 or fp32, got '${p}'`);
    process.exit(2);
  }
}
const corpus = await loadPubTatorCorpus(values.corpus);
const view = kbOntologyView(await loadIndexKb(indexDir));
const work = mkdtempSync(join(tmpdir(), 'cuilink-evaluator-bar-'));
const broker = await startLocalBroker();
const kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'evaluator-bar', logLevel: 'error' });
const codec = createRecordCodec();

async function runBar(precision: Precision) {
  const started = performance.now();
  const topics = { input: `bar-${precision}.notes`, output: `bar-${precision}.linked`, deadLetter: `bar-${precision}.dead-letter` };
  const goldTopic = `bar-${precision}.gold`;
  const config = loadStageConfig({
    env: {},
    overrides: { brokers: broker.brokers, groupId: `bar-${precision}-stage`, topics, 'linker.indexDir': indexDir, 'linker.rerankerDir': false, 'http.enabled': false, 'telemetry.prometheus': false, 'telemetry.logLevel': 'warn' },
  });
  await ensureTopics(kafka, [topics.input, topics.output, topics.deadLetter, goldTopic], { partitions: 2 });
  const open = () => openLinker({ indexDir, rerankerDir: false, precision, provider: 'cpu' });
  const runtime = await startStageRuntime(config, { brokers: broker.brokers, openCore: open });
  const evaluator = await startKafkaEvaluator(view, {
    kafka,
    codec,
    linkedTopic: topics.output,
    goldTopic,
    groupId: `bar-${precision}-evaluator`,
    stateFile: join(work, `state-${precision}.json`),
    snapshotIntervalMs: 1000,
    port: 0,
    host: '127.0.0.1',
    joiner: { ttlMs: 3_600_000, maxPending: 1_000_000 },
    windows: { lastN: 1_000_000, lastMs: 3_600_000 },
    alerts: { minSamples: 1 },
    log: (line) => console.log(line),
  });
  const published = await publishGoldSample({ kafka, codec, corpus: await checkGoldCorpus(values.corpus, undefined), fraction: 1, seed: 1, goldTopic, notesTopic: topics.input });
  console.log(`${precision}: published ${published.notesPublished} notes and ${published.goldPublished} gold mentions`);
  const deadline = Date.now() + 15 * 60_000;
  let report = evaluator.report();
  while (report.samplesScored < published.goldPublished && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1000));
    report = evaluator.report();
  }
  const streamSeconds = (performance.now() - started) / 1000;
  await evaluator.stop();
  await runtime.close();

  const linker = await open();
  const offline = await evaluateCorpus(linker, corpus, view);
  await linker.close();

  const streamed = report.windows.count.overall;
  const rows = (['acc1', 'acc5', 'mrr'] as const).map((metric) => {
    const s = streamed[metric] ?? NaN;
    const o = offline.metrics.overall[metric] ?? NaN;
    return { metric, evaluator: s, offline: o, equalTo3Decimals: s.toFixed(3) === o.toFixed(3) };
  });
  const pass = report.samplesScored === offline.mentions && rows.every((r) => r.equalTo3Decimals);
  console.log(`\n${precision}: NCBI-disease dev through the stage, 100% gold: ${report.samplesScored} of ${published.goldPublished} gold mentions joined (offline: ${offline.mentions})`);
  console.log(`${'metric'.padEnd(8)}${'evaluator'.padStart(12)}${'cuilink eval'.padStart(14)}  equal (3 dp)`);
  for (const r of rows) console.log(`${r.metric.padEnd(8)}${r.evaluator.toFixed(4).padStart(12)}${r.offline.toFixed(4).padStart(14)}  ${r.equalTo3Decimals ? 'yes' : 'NO'}`);
  console.log(`${precision}: bar ${pass ? 'PASS' : 'FAIL'}\n`);
  return { precision, joined: report.samplesScored, offlineMentions: offline.mentions, join: report.join, rows, streamedOverall: streamed, offlineOverall: offline.metrics.overall, streamSeconds, pass };
}

try {
  const runs = [];
  for (const precision of precisions) runs.push(await runBar(precision));
  mkdirSync(join('bench', 'results'), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify({ benchmark: 'evaluator-bar', date: new Date().toISOString(), corpus: values.corpus, index: indexDir, reranker: false, runs }, null, 2)}\n`);
  console.log(runs.map((r) => `${r.precision}: ${r.pass ? 'PASS' : 'FAIL'}`).join(', '));
  // The bar holds for every precision asked for, not for one of them.
  process.exitCode = runs.every((r) => r.pass) ? 0 : 1;
} finally {
  await broker.stop();
  rmSync(work, { recursive: true, force: true });
}
