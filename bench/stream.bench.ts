// npm run bench:stream — NCBI-disease abstracts (gold spans as NER mentions) through the real
// broker and the Kafka stage with the real default model over a MEDIC index, next to the offline
// linker in the same process. Prints figures and writes bench/results/stream.json.
//   --corpus FILE --kb FILE --index DIR (reuse) --repeat N --out FILE
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cpus } from 'node:os';
import { Partitioners } from 'kafkajs';
import { loadPubTatorCorpus } from '../src/eval/gold.ts';
import { openLinker } from '../src/link/open-linker.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { readModelManifest } from '../src/encode/manifest.ts';
import type { NoteInput } from '../src/link/types.ts';
import { startLocalBroker } from '../src/stream/local-broker.ts';
import { createKafkaClient } from '../src/stream/kafka-client.ts';
import { ensureTopics } from '../src/stream/topics.ts';
import { stageConfigSchema } from '../src/stream/stage-config.ts';
import { LinkingStage } from '../src/stream/linking-stage.ts';
import { AvroStageCodec, createRecordCodec } from '../src/stream/avro/index.ts';
import { createLogger } from '../src/telemetry/logger.ts';
import { noteMessage, publish, TopicCollector, waitFor } from '../test/support/stream-fixtures.ts';

const SHARED = join('..', 'shared', 'data');
const { values } = parseArgs({
  options: {
    corpus: { type: 'string', default: join(SHARED, 'ncbi-disease', 'NCBIdevelopset_corpus.txt') },
    kb: { type: 'string', default: join(SHARED, 'medic', 'CTD_diseases.tsv.gz') },
    index: { type: 'string' },
    repeat: { type: 'string', default: '2' },
    'max-mentions': { type: 'string', default: '128' },
    out: { type: 'string', default: join('bench', 'results', 'stream.json') },
  },
});
for (const file of [values.corpus, values.kb]) {
  if (!existsSync(file)) {
    console.error(`bench:stream: ${file} not found (the benchmark needs ../shared/data)`);
    process.exit(2);
  }
}
const model = readModelManifest(DEFAULT_MODEL_DIR);
const indexDir = values.index ?? join('.cache', 'cuilink', 'bench', `medic--${model.id}`);
if (!existsSync(join(indexDir, 'manifest.json'))) {
  console.log(`building ${indexDir} (once) …`);
  const build = spawnSync(process.execPath, ['bin/cuilink.js', 'index', 'build', '--kb', values.kb, '--out', indexDir, '--force', '--no-progress'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
const repeat = Number(values.repeat);
const maxMentions = Number(values['max-mentions']);

const corpus = await loadPubTatorCorpus(values.corpus);
const copies = (tag: string): NoteInput[] => Array.from({ length: repeat }, (_, r) => corpus.notes.map((n) => ({ ...n, noteId: `${tag}${r}-${n.noteId}` }))).flat();
const mentionsOf = (notes: NoteInput[]) => notes.reduce((s, n) => s + n.mentions.length, 0);
console.log(`corpus ${values.corpus}: ${corpus.notes.length} notes, ${mentionsOf(corpus.notes)} mentions (×${repeat} per phase); index ${indexDir}; ${cpus().length} CPUs`);

const linker = await openLinker({ indexDir });

// Offline: the same linker, notes cut into batches of at most maxMentions mentions (the stage's default).
function batches(notes: NoteInput[]): NoteInput[][] {
  const out: NoteInput[][] = [];
  let current: NoteInput[] = [];
  let size = 0;
  for (const n of notes) {
    if (current.length > 0 && size + n.mentions.length > maxMentions) {
      out.push(current);
      current = [];
      size = 0;
    }
    current.push(n);
    size += n.mentions.length;
  }
  if (current.length > 0) out.push(current);
  return out;
}
await linker.linkNotes(corpus.notes.slice(0, 20)); // warm-up
const offlineNotes = copies('off');
// Measured before and after the stream phases; the faster run is the reference (the conservative choice on a shared machine).
async function measureOffline(when: string): Promise<number> {
  const t0 = performance.now();
  for (const batch of batches(offlineNotes)) await linker.linkNotes(batch);
  const seconds = (performance.now() - t0) / 1000;
  console.log(`offline linker (${when}): ${mentionsOf(offlineNotes)} mentions in ${seconds.toFixed(2)} s = ${(mentionsOf(offlineNotes) / seconds).toFixed(1)} mentions/s`);
  return mentionsOf(offlineNotes) / seconds;
}
const offlineRates = [await measureOffline('before')];

const broker = await startLocalBroker();
const kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'bench-stream', logLevel: 'nothing' });
const topics = { input: 'bench.notes', output: 'bench.linked', deadLetter: 'bench.dead' };
await ensureTopics(kafka, Object.values(topics), { partitions: 2 });
const config = stageConfigSchema.parse({ brokers: broker.brokers, groupId: 'bench', topics, batching: { maxMentions }, http: { enabled: false }, telemetry: { logLevel: 'warn' } });
const recordCodec = createRecordCodec();
const stage = new LinkingStage({ config, linker, codec: new AvroStageCodec(recordCodec), logger: createLogger({ level: 'warn' }) });
const collector = new TopicCollector(kafka, topics.output);
await collector.start();

let peakRss = 0;
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);

// Max rate: the whole phase published up front, then consumed as fast as the stage goes.
const maxNotes = copies('max');
await publish(kafka, topics.input, await Promise.all(maxNotes.map((n) => noteMessage(recordCodec, n))));
await stage.start();
await stage.whenJoined();
const cpuBefore = process.cpuUsage();
const started = performance.now();
await waitFor(() => stage.stats().counts.produced + stage.stats().counts.deadLettered >= maxNotes.length, 600_000, 'the max-rate phase');
const maxSeconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
const streamRate = mentionsOf(maxNotes) / maxSeconds;
const cpuPercent = ((cpu.user + cpu.system) / 1e6 / maxSeconds) * 100;
console.log(`through Kafka (max rate): ${mentionsOf(maxNotes)} mentions in ${maxSeconds.toFixed(2)} s = ${streamRate.toFixed(1)} mentions/s; stage process CPU ${cpuPercent.toFixed(0)}%`);

// Half rate: notes published one by one, paced at half the measured max, latency publish → output seen.
const halfNotes = copies('half');
const notesPerSecond = streamRate / 2 / (mentionsOf(halfNotes) / halfNotes.length);
const sentAt = new Map<string, number>();
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
await producer.connect();
const seen = new Map<string, number>();
const pollSeen = setInterval(() => {
  for (const r of collector.records) if (r.key && !seen.has(r.key)) seen.set(r.key, Date.now());
}, 2);
const halfStart = performance.now();
for (const [i, note] of halfNotes.entries()) {
  const due = halfStart + (i / notesPerSecond) * 1000;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const message = await noteMessage(recordCodec, note);
  sentAt.set(note.noteId, Date.now());
  await producer.send({ topic: topics.input, acks: -1, messages: [message] });
}
await waitFor(() => halfNotes.every((n) => seen.has(n.noteId)), 600_000, 'the half-rate phase');
clearInterval(pollSeen);
const latencies = halfNotes.map((n) => seen.get(n.noteId)! - sentAt.get(n.noteId)!).sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
console.log(`half rate (${notesPerSecond.toFixed(1)} notes/s ≈ ${(streamRate / 2).toFixed(0)} mentions/s): end-to-end latency p50 ${pct(50)} ms, p95 ${pct(95)} ms, p99 ${pct(99)} ms`);
clearInterval(rssTimer);
console.log(`peak RSS of the stage process ${(peakRss / 2 ** 20).toFixed(0)} MiB (broker JVM not included)`);

await producer.disconnect();
await collector.stop();
await stage.stop();
await broker.stop();
offlineRates.push(await measureOffline('after'));
await linker.close();
const offlineRate = Math.max(...offlineRates);

const throughputRatio = streamRate / offlineRate;
const result = {
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model, note: 'shared with other jobs; the broker JVM runs on the same cores' },
  corpus: { file: values.corpus, notes: corpus.notes.length, mentions: mentionsOf(corpus.notes), repeat },
  index: indexDir,
  model: model.id,
  batching: { maxMentions },
  offline: { mentions: mentionsOf(offlineNotes), mentionsPerSecondRuns: offlineRates, mentionsPerSecond: offlineRate },
  stream: { mentions: mentionsOf(maxNotes), seconds: maxSeconds, mentionsPerSecond: streamRate, cpuPercent, peakRssMiB: peakRss / 2 ** 20 },
  halfRate: { notesPerSecond, mentionsPerSecond: streamRate / 2, latencyMs: { p50: pct(50), p95: pct(95), p99: pct(99), max: latencies[latencies.length - 1] } },
  bars: {
    throughputVsOffline: { value: throughputRatio, bar: 0.9, pass: throughputRatio >= 0.9 },
    p99AtHalfRateMs: { value: pct(99), bar: 500, pass: pct(99) <= 500 },
  },
};
mkdirSync(join('bench', 'results'), { recursive: true });
writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
console.log(`bars: throughput ${(throughputRatio * 100).toFixed(0)}% of offline (≥ 90%: ${result.bars.throughputVsOffline.pass ? 'pass' : 'FAIL'}); p99 ${pct(99)} ms at half rate (≤ 500 ms: ${result.bars.p99AtHalfRateMs.pass ? 'pass' : 'FAIL'}) → ${values.out}`);
