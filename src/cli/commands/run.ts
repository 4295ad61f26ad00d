import { join } from 'node:path';
import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag } from '../args.ts';
import { loadStageConfig, connectionOf, type StageConfig } from '../../stream/stage-config.ts';
import { startLocalBroker, type LocalBroker } from '../../stream/local-broker.ts';
import { createKafkaClient } from '../../stream/kafka-client.ts';
import { ensureTopics } from '../../stream/topics.ts';
import { REPO_ROOT } from '../../stream/kafka-jars.ts';
import { startStageRuntime, type StageRuntime } from '../stage-runtime.ts';
import { publishAndCollect, readDemoNotes, type DemoResult } from '../run-demo.ts';
import type { NoteInput } from '../../link/types.ts';
import { createLogger } from '../../telemetry/logger.ts';

const DEFAULT_SAMPLES = join(REPO_ROOT, 'samples', 'notes.jsonl');

const usage = `Usage: cuilink run [--config FILE] [--follow] [--samples FILE] [--index DIR] [--http-port N]

Runs the Kafka linking stage: NoteEvent records in (Avro), LinkedNote records out, bad input to
the dead-letter topic. Options come from --config (JSON), then CUILINK_* environment variables,
then these flags; docs/stream.md lists them all with their defaults.

With brokers configured (CUILINK_BROKERS or "brokers" in the config), the stage runs until
SIGTERM/SIGINT, then drains in-flight batches, commits and exits 0.

With no brokers configured, it demonstrates itself: starts a local Kafka broker (jars fetched
from Maven Central into .kafka/ once), creates the topics, publishes the sample notes, links them
with the default model and index (HPO, built once and cached), prints each mention's concept and
the throughput, and exits. --follow keeps the stage running afterwards.

Options:
  --config FILE         stage configuration (JSON)
  --follow              demo mode: keep running after the samples (until SIGTERM/SIGINT)
  --samples FILE        demo mode: note events to publish (JSON lines; default samples/notes.jsonl)
  --index DIR           index directory (overrides linker.indexDir)
  --http-port N         port for /healthz, /readyz, /metrics (overrides http.port; 0 = any free)
  -h, --help            this text`;

export const run: Command = {
  name: 'run',
  summary: 'Run the Kafka linking stage (no brokers configured: a local demo on the sample notes)',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      config: { type: 'string' },
      follow: { type: 'boolean', default: false },
      samples: { type: 'string' },
      index: { type: 'string' },
      'http-port': { type: 'string' },
    });
    const overrides: Record<string, unknown> = {};
    if (values.index !== undefined) overrides['linker.indexDir'] = values.index;
    if (values['http-port'] !== undefined) overrides['http.port'] = parseNumberFlag(values['http-port'], 'http-port', 8080, { min: 0, max: 65535, integer: true });
    const config = loadStageConfig({ file: values.config, overrides });
    if (config.brokers.length > 0) return runService(config);
    // The demo is for a terminal: quiet logs unless asked, and any free port rather than 8080.
    if (values.config === undefined && process.env.CUILINK_LOG_LEVEL === undefined) {
      config.telemetry.logLevel = 'warn';
      config.telemetry.kafkaLogLevel = 'error';
    }
    if (values['http-port'] === undefined && process.env.CUILINK_HTTP_PORT === undefined && config.http.port === 8080) config.http.port = 0;
    return runDemo(config, values.samples ?? DEFAULT_SAMPLES, values.follow === true);
  },
};

/** Resolves on the first SIGTERM/SIGINT; a second one exits at once. */
function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const onSignal = (signal: string) => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      process.once('SIGTERM', () => process.exit(130));
      process.once('SIGINT', () => process.exit(130));
      resolve(signal);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

/**
 * Exit codes of `cuilink run` (docs/stream.md): 0 stopped on a signal after a full drain; 1 an
 * internal fault while running (consumer gave up, encoder could not be restarted) or a drain
 * that did not finish; 2 usage or configuration error; 3 could not start (brokers unreachable,
 * topics missing, index or model not loadable); 130 a second signal during the drain.
 */
export const EXIT = { stopped: 0, fault: 1, usage: 2, startFailed: 3 } as const;

async function serveUntilStopped(runtime: StageRuntime): Promise<number> {
  let cause: unknown;
  const fatal = new Promise<string>((resolve) => runtime.stage.onFatal((error) => {
    cause = error;
    resolve('fatal');
  }));
  const reason = await Promise.race([untilSignal(), fatal]);
  runtime.logger.info('shutting down', { reason });
  const drained = await runtime.close();
  const exitCode = reason === 'fatal' || !drained ? EXIT.fault : EXIT.stopped;
  // One line that says why the process ends, whatever the path.
  runtime.logger[exitCode === 0 ? 'info' : 'error']('exiting', { exitCode, reason, drained, ...(cause === undefined ? {} : { cause }) });
  // kafkajs and exporters are closed by now; this only guards against a stray handle keeping the process up.
  setTimeout(() => process.exit(process.exitCode ?? exitCode), 5000).unref();
  return exitCode;
}

async function runService(config: StageConfig): Promise<number> {
  let runtime: StageRuntime;
  try {
    runtime = await startStageRuntime(config);
  } catch (error) {
    // A broker that is down, a missing topic or index: one JSON line with the cause, no stack trace.
    createLogger({ level: config.telemetry.logLevel, fields: { service: config.telemetry.serviceName } }).error('exiting: the stage could not start', { exitCode: EXIT.startFailed, cause: error });
    return EXIT.startFailed;
  }
  return serveUntilStopped(runtime);
}

async function runDemo(config: StageConfig, samplesFile: string, follow: boolean): Promise<number> {
  const { notes, skipped } = readDemoNotes(samplesFile);
  for (const s of skipped) console.error(`run: ${samplesFile}:${s.line}: skipped (${s.reason})`);
  console.error('run: no brokers configured: starting a local Kafka broker (the first run fetches its jars from Maven Central)');
  const broker: LocalBroker = await startLocalBroker();
  try {
    const kafka = createKafkaClient(connectionOf(config, broker.brokers), () => {});
    await ensureTopics(kafka, [config.topics.input, config.topics.output, config.topics.deadLetter], { partitions: 3 });
    console.error(`run: broker ${broker.brokers.join(',')}, topics ${config.topics.input} → ${config.topics.output} (dead letters: ${config.topics.deadLetter})`);
    console.error('run: loading the linker (the first run builds the default HPO index, a few minutes)');
    const runtime = await startStageRuntime(config, { brokers: broker.brokers });
    try {
      await runtime.stage.whenJoined();
      const result = await publishAndCollect(kafka, runtime.recordCodec, config, notes, 120_000);
      printDemo(notes, result, runtime);
      const accounted = result.linked.size + result.deadLettered.size;
      if (accounted < notes.length) console.error(`run: only ${accounted} of ${notes.length} notes came back within 120 s`);
      if (follow) {
        console.log(`\nFollowing: publish NoteEvent records to '${config.topics.input}' at ${broker.brokers.join(',')}; ${runtime.health ? `${runtime.health.url}/metrics; ` : ''}Ctrl-C to stop.`);
        return await serveUntilStopped(runtime);
      }
      return accounted === notes.length ? 0 : 1;
    } finally {
      await runtime.close();
    }
  } finally {
    await broker.stop();
  }
}

function printDemo(notes: NoteInput[], result: DemoResult, runtime: StageRuntime): void {
  const byId = new Map(notes.map((n) => [n.noteId, n]));
  let mentions = 0;
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
      const concept = m.nil ? `NIL (best: ${m.candidates[0]?.conceptId ?? '-'} ${m.candidates[0]?.name ?? ''})` : `${m.conceptId}  ${m.conceptName}`;
      const expanded = m.expandedFrom ? '  [abbreviation, linked through its long form]' : '';
      console.log(`  ${mentionText(source, m.mentionId).padEnd(width)}  → ${concept}  (${m.score.toFixed(3)})${expanded}`);
    }
  }
  const seconds = Math.max(1e-3, (result.lastReceivedAt - result.firstSentAt) / 1000);
  const sorted = [...result.latenciesMs].sort((a, b) => a - b);
  const p50 = sorted[Math.floor(sorted.length / 2)] ?? 0;
  const max = sorted[sorted.length - 1] ?? 0;
  const { counts } = runtime.stage.stats();
  console.log(`\n${result.linked.size} notes linked, ${result.deadLettered.size} dead-lettered; ${mentions} mentions in ${seconds.toFixed(2)} s = ${(mentions / seconds).toFixed(1)} mentions/s through Kafka (latency p50 ${p50} ms, max ${max} ms; ${counts.batches} linking batches)`);
  console.log(`linker ${runtime.linker.versions.linkerVersion}, model ${runtime.linker.versions.modelVersion}, index ${runtime.linker.versions.indexVersion}`);
}

function mentionText(note: NoteInput, mentionId: string): string {
  return note.mentions.find((m) => m.id === mentionId)?.text ?? mentionId;
}
