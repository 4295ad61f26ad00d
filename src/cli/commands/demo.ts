import { join } from 'node:path';
import type { Command } from '../command.ts';
import { parseFlags } from '../args.ts';
import { connectionOf, stageTopicsOf, type StageConfig } from '../../stream/stage-config.ts';
import { CuilinkError } from '../../kb/errors.ts';
import { startLocalBroker, type LocalBroker } from '../../stream/local-broker.ts';
import { createKafkaClient } from '../../stream/kafka-client.ts';
import { ensureTopics } from '../../stream/topics.ts';
import { REPO_ROOT } from '../../stream/kafka-jars.ts';
import { stageConfigFromFlags } from '../stage-flags.ts';
import { startStageRuntime, type StageRuntime } from '../stage-runtime.ts';
import { publishAndCollect, readDemoNotes, type DemoResult } from '../run-demo.ts';
import { describeDecision } from '../link-decision.ts';
import { serveUntilStopped, untilSignal } from './run.ts';
import type { NoteInput } from '../../link/types.ts';

const DEFAULT_SAMPLES = join(REPO_ROOT, 'samples', 'notes.jsonl');
const DEMO_REVIEW_TOPIC = 'cuilink.review';

const usage = `Usage: cuilink demo [--config FILE] [--follow] [--samples FILE] [--index DIR] [--http-port N]

The local demonstration of the Kafka stage (what 'npm start' runs): starts a local Kafka broker
(jars fetched from Maven Central into .kafka/ once), creates the topics, publishes the sample
notes, links them with the default model and index (HPO, built once and cached), prints each
mention's concept, score and how it was decided, then the throughput, stops the broker and exits.

How a link was decided (the LinkedMention's via; docs/confidence.md lists every stage):
  exact         the mention's own text is a name in the index's exact normalized-name table
  abbreviation  an in-note short form linked through its long form
  loose, xref, inheritance, unqualified, composite
                a looser name lookup (spelling and word order, another vocabulary's name, …)
  dense         ranked by the bi-encoder's vector (HNSW) score
  memory        labelled mentions decided it
  , reranked    retrieval left it ambiguous; the cross-encoder rescored the top candidates
  NIL           its concept is probably not in the KB: P(in KB) under the calibration's NIL
                threshold, or no candidate (the best one is shown)

It always runs its own broker: configured brokers (CUILINK_BROKERS, "brokers") are ignored. The
service is 'cuilink run'. Other stage options (--config, CUILINK_*) apply as they do there.

Options:
  --config FILE         stage configuration (JSON; its brokers are ignored)
  --follow              keep the stage running after the samples (until SIGTERM/SIGINT)
  --samples FILE        note events to publish (JSON lines, the 'cuilink link' input; default samples/notes.jsonl)
  --index DIR           index directory (overrides linker.indexDir; default: the HPO index)
  --http-port N         port for /healthz, /readyz, /metrics (default: any free port)
  -h, --help            this text`;

export const demo: Command = {
  name: 'demo',
  summary: 'Local demo: start a Kafka broker, link the sample notes, print how each was linked',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      config: { type: 'string' },
      follow: { type: 'boolean', default: false },
      samples: { type: 'string' },
      index: { type: 'string' },
      'http-port': { type: 'string' },
    });
    // The demo shows the review route too: unsure mentions also go to a review topic. Given as a
    // default of the config, not set after it loads: a review setting alone (CUILINK_REVIEW_BELOW) acts through it.
    const config = stageConfigFromFlags(values, { 'topics.review': DEMO_REVIEW_TOPIC });
    if (config.brokers.length > 0) console.error(`demo: ignoring the configured brokers (${config.brokers.join(',')}): the demo runs its own; the service is 'cuilink run'`);
    // The demo is for a terminal: quiet logs unless asked, and any free port rather than 8080.
    if (values.config === undefined && process.env.CUILINK_LOG_LEVEL === undefined) {
      config.telemetry.logLevel = 'warn';
      config.telemetry.kafkaLogLevel = 'error';
    }
    if (values['http-port'] === undefined && process.env.CUILINK_HTTP_PORT === undefined && config.http.port === 8080) config.http.port = 0;
    return runDemo(config, values.samples ?? DEFAULT_SAMPLES, values.follow === true);
  },
};

async function runDemo(config: StageConfig, samplesFile: string, follow: boolean): Promise<number> {
  const { notes, skipped } = readDemoNotes(samplesFile);
  for (const s of skipped) console.error(`demo: ${samplesFile}:${s.line}: skipped (${s.reason})`);
  console.error('demo: starting a local Kafka broker (the first run fetches its jars from Maven Central)');
  const broker: LocalBroker = await startLocalBroker();
  // Nothing restarts the demo's own broker: without this the stage would retry it for ever
  // (--follow) or the samples wait out their timeout, and the cause go with the temporary data dir.
  const died = broker.died.then((how): never => {
    throw new CuilinkError('KAFKA_BROKER_EXITED', `the demo's Kafka broker on ${broker.brokers.join(',')} (pid ${broker.pid}) exited unexpectedly (${how})`);
  });
  died.catch(() => {});
  const opened: { runtime?: StageRuntime } = {};
  try {
    return await Promise.race([linkSamples(config, broker, notes, follow, died, opened), died]);
  } finally {
    await opened.runtime?.close();
    await broker.stop();
  }
}

async function linkSamples(config: StageConfig, broker: LocalBroker, notes: NoteInput[], follow: boolean, died: Promise<never>, opened: { runtime?: StageRuntime }): Promise<number> {
  const kafka = createKafkaClient(connectionOf(config, broker.brokers), () => {});
  await ensureTopics(kafka, stageTopicsOf(config), { partitions: 3 });
  console.error(`demo: broker ${broker.brokers.join(',')}, topics ${config.topics.input} → ${config.topics.output} (dead letters: ${config.topics.deadLetter})`);
  console.error('demo: loading the linker (the first run builds the default HPO index, a few minutes)');
  const runtime = await startStageRuntime(config, { brokers: broker.brokers });
  opened.runtime = runtime;
  try {
    await runtime.stage.whenJoined();
    // A cold start's first inference (ONNX sessions sizing their buffers) is not the samples' latency: run it first, past the link cache.
    await runtime.linker.probe?.();
    const result = await publishAndCollect(kafka, runtime.recordCodec, config, notes, 120_000);
    printDemo(notes, result, runtime, config);
    const accounted = result.linked.size + result.deadLettered.size;
    if (accounted < notes.length) console.error(`demo: only ${accounted} of ${notes.length} notes came back within 120 s`);
    if (follow) {
      console.log(`\nFollowing: publish NoteEvent records to '${config.topics.input}' at ${broker.brokers.join(',')}; ${runtime.health ? `${runtime.health.url}/metrics; ` : ''}Ctrl-C to stop.`);
      return await serveUntilStopped(runtime, Promise.race([untilSignal(), died]));
    }
    return accounted === notes.length ? 0 : 1;
  } finally {
    await runtime.close();
  }
}

function printDemo(notes: NoteInput[], result: DemoResult, runtime: StageRuntime, config: StageConfig): void {
  const byId = new Map(notes.map((n) => [n.noteId, n]));
  let mentions = 0;
  const decisions = new Map<string, number>();
  for (const note of notes) {
    const linked = result.linked.get(note.noteId);
    const dead = result.deadLettered.get(note.noteId);
    if (dead) {
      console.log(`${note.noteId}: dead-lettered (${dead.errorCode}: ${dead.reason})`);
      continue;
    }
    if (!linked) {
      console.log(`${note.noteId}: no output yet`);
      continue;
    }
    console.log(`${note.noteId}  (${linked.mentions.length} mentions)`);
    const source = byId.get(note.noteId)!;
    const width = Math.max(0, ...linked.mentions.map((m) => mentionText(source, m.mentionId).length));
    for (const m of linked.mentions) {
      mentions++;
      const decision = describeDecision(m);
      const kind = m.nil ? 'NIL' : decision;
      decisions.set(kind, (decisions.get(kind) ?? 0) + 1);
      const toReview = result.reviewed.has(`${note.noteId}/${m.mentionId}`) ? '  → review' : '';
      const concept = m.nil ? `NIL (best: ${m.candidates[0]?.conceptId ?? '-'} ${m.candidates[0]?.name ?? ''})` : `${m.conceptId}  ${m.conceptName}`;
      // A NIL says why: its concept is probably not in the KB (P(in KB) under the threshold).
      const confidence = `${m.confidence === null ? '' : `confidence ${m.confidence.toFixed(2)}, `}${m.nil && m.inKb != null ? `P(in KB) ${m.inKb.toFixed(2)}, ` : ''}`;
      console.log(`  ${mentionText(source, m.mentionId).padEnd(width)}  → ${concept}  (${confidence}score ${m.score.toFixed(3)}, ${m.nil ? 'NIL' : decision})${toReview}`);
    }
  }
  const seconds = Math.max(1e-3, (result.lastReceivedAt - result.firstSentAt) / 1000);
  const sorted = [...result.latenciesMs].sort((a, b) => a - b);
  const p50 = sorted[Math.floor(sorted.length / 2)] ?? 0;
  const max = sorted[sorted.length - 1] ?? 0;
  const { counts } = runtime.stage.stats();
  const tally = [...decisions].sort((a, b) => b[1] - a[1]).map(([d, n]) => `${n} ${d}`).join(', ');
  console.log(`\n${result.linked.size} notes linked, ${result.deadLettered.size} dead-lettered; ${mentions} mentions in ${seconds.toFixed(2)} s = ${(mentions / seconds).toFixed(1)} mentions/s through Kafka (latency p50 ${p50} ms, max ${max} ms; ${counts.batches} linking batches)`);
  if (tally) console.log(`decided: ${tally}`);
  if (config.topics.review !== undefined) console.log(`sent to review (${config.topics.review}): ${result.reviewed.size} mentions (NIL, or confidence under ${config.review.belowConfidence})`);
  console.log(`linker ${runtime.linker.versions.linkerVersion}, model ${runtime.linker.versions.modelVersion}, index ${runtime.linker.versions.indexVersion}`);
}

function mentionText(note: NoteInput, mentionId: string): string {
  return note.mentions.find((m) => m.id === mentionId)?.text ?? mentionId;
}
