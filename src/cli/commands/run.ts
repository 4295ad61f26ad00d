import type { Command } from '../command.ts';
import { parseFlags } from '../args.ts';
import { connectionOf, stageTopicsOf, type StageConfig } from '../../stream/stage-config.ts';
import { createKafkaClient } from '../../stream/kafka-client.ts';
import type { KafkaClient } from '../../stream/kafka/client-types.ts';
import { requireTopics, TopicMissingError } from '../../stream/topics.ts';
import { createPlannedTopics, planTopics, settingsText } from '../../stream/topic-plan.ts';
import { stageConfigFromFlags } from '../stage-flags.ts';
import { startStageRuntime, type StageRuntime } from '../stage-runtime.ts';
import { InputError } from '../../kb/errors.ts';
import { createLogger, type Logger } from '../../telemetry/logger.ts';
import { disableInspectorSignal } from '../process-hardening.ts';

const usage = `Usage: cuilink run [--config FILE] [--index DIR] [--http-port N] [--create-topics]

Runs the Kafka linking stage: NoteEvent records in (Avro), LinkedNote records out, bad input to
the dead-letter topic. Options come from --config (JSON), then CUILINK_* environment variables,
then these flags; docs/stream.md lists them all with their defaults.

Brokers must be configured (CUILINK_BROKERS or "brokers" in the config); without them it exits 2
at once with a one-line reason (it never starts a broker of its own: that is 'cuilink demo').
The topics must exist ('cuilink topics create' with the same --config); a missing one, or a broker
that cannot be reached, exits 3 naming it, checked before the linker loads (minutes for a first
default index). The stage runs until SIGTERM/SIGINT, then drains in-flight batches, commits and exits 0
(a signal during start-up ends it there, before it consumes anything, and exits 0).

Options:
  --config FILE         stage configuration (JSON)
  --index DIR           index directory (overrides linker.indexDir)
  --memory ROOT|DIR     labelled-mention memory (overrides linker.memoryDir; a root's CURRENT is polled and swapped live)
  --calibration FILE|none  confidence calibration (overrides linker.calibration; default: the shipped one when it fits)
  --http-port N         port for /healthz, /readyz, /metrics (overrides http.port; 0 = any free)
  --create-topics       local use, not for production: first create the missing topics with the
                        defaults of 'cuilink topics create' (3 partitions, replication 1; docs/topics.md)
  -h, --help            this text`;

export const run: Command = {
  name: 'run',
  summary: 'Run the Kafka linking stage (needs brokers; the local demo is `cuilink demo`)',
  usage,
  async run(argv) {
    // No debugger on SIGUSR1 in the process that holds the notes (CUILINK_INSPECTOR=1 allows it).
    disableInspectorSignal();
    const { values } = parseFlags(argv, {
      config: { type: 'string' },
      index: { type: 'string' },
      memory: { type: 'string' },
      calibration: { type: 'string' },
      'http-port': { type: 'string' },
      'create-topics': { type: 'boolean', default: false },
    });
    const config = stageConfigFromFlags(values);
    // A pod whose CUILINK_BROKERS was lost must fail loudly, not quietly become a demo.
    if (config.brokers.length === 0) throw new InputError('no brokers configured: set CUILINK_BROKERS or "brokers" in --config (the local demo on the sample notes is \'cuilink demo\', what npm start runs)', 'NO_BROKERS');
    return runService(config, { createTopics: values['create-topics'] === true, configFile: values.config });
  },
};

/** `--create-topics`: what 'cuilink topics create' does with its defaults, one log line per topic. */
async function createTopics(kafka: KafkaClient, config: StageConfig, logger: Logger): Promise<void> {
  for (const report of await createPlannedTopics(kafka, planTopics(config))) {
    const { planned } = report.state;
    logger.info(report.created ? 'topic created' : 'topic exists', { topic: planned.topic, role: planned.role, settings: settingsText(report.state), ...(report.notes.length > 0 ? { notes: report.notes } : {}) });
  }
}

/** Resolves on the first SIGTERM/SIGINT; a second one exits at once. */
export function untilSignal(): Promise<string> {
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
 * Exit codes of `cuilink run` (docs/stream.md): 0 stopped on a signal after a full drain or during start-up; 1 an
 * internal fault while running (consumer gave up, encoder could not be restarted) or a drain
 * that did not finish; 2 usage or configuration error; 3 could not start (brokers unreachable,
 * topics missing, index or model not loadable); 130 a second signal during the drain.
 */
export const EXIT = { stopped: 0, fault: 1, usage: 2, startFailed: 3 } as const;

/**
 * Serves until a signal or a fatal stage error; the demo's --follow uses it too. `stopSignal` is
 * listened for before the runtime starts where the caller can (a signal during `cuilink run`'s
 * start-up ends it there, exit 0: runService).
 */
export async function serveUntilStopped(runtime: StageRuntime, stopSignal: Promise<string> = untilSignal()): Promise<number> {
  let cause: unknown;
  const fatal = new Promise<string>((resolve) => runtime.stage.onFatal((error) => {
    cause = error;
    resolve('fatal');
  }));
  const reason = await Promise.race([stopSignal, fatal]);
  runtime.logger.info('shutting down', { reason });
  const drained = await runtime.close();
  const exitCode = reason === 'fatal' || !drained ? EXIT.fault : EXIT.stopped;
  // One line that says why the process ends, whatever the path.
  runtime.logger[exitCode === 0 ? 'info' : 'error']('exiting', { exitCode, reason, drained, ...(cause === undefined ? {} : { cause }) });
  return exitCode;
}

async function runService(config: StageConfig, options: { createTopics: boolean; configFile?: string }): Promise<number> {
  const stopSignal = untilSignal();
  const logger = createLogger({ level: config.telemetry.logLevel, fields: { service: config.telemetry.serviceName } });
  const abandon = new AbortController();
  const starting = (async () => {
    // The broker and the topics before the linker: its load takes minutes on a first default index,
    // and a missing topic or an unreachable broker must not be reported only after it.
    const kafka = createKafkaClient(connectionOf(config), () => {});
    if (options.createTopics) await createTopics(kafka, config, logger);
    const topics = stageTopicsOf(config);
    logger.info('checking the brokers and topics', { brokers: config.brokers, topics });
    await requireTopics(kafka, topics);
    abandon.signal.throwIfAborted();
    return startStageRuntime(config, { signal: abandon.signal });
  })();
  let runtime: StageRuntime;
  try {
    const first = await Promise.race([starting, stopSignal]);
    if (typeof first === 'string') {
      // A start-up step can wait for minutes (a first default index, a broker that does not answer)
      // and none of them can be cut short: the stage is told not to consume, and the process ends
      // now instead of after the pod's grace period. Nothing was taken, so nothing is committed.
      abandon.abort();
      starting.then((late) => late.close(), () => {}).catch(() => {});
      logger.info('exiting', { exitCode: EXIT.stopped, reason: first, started: false });
      return EXIT.stopped;
    }
    runtime = first;
  } catch (error) {
    // A broker that is down, a missing topic or index: one JSON line with the cause, no stack trace.
    const cause = error instanceof TopicMissingError ? new TopicMissingError(error.missing, `'cuilink topics create${options.configFile === undefined ? '' : ` --config ${options.configFile}`}' (or, on a local broker, start with 'cuilink run --create-topics')`) : error;
    logger.error('exiting: the stage could not start', { exitCode: EXIT.startFailed, cause });
    return EXIT.startFailed;
  }
  return serveUntilStopped(runtime, stopSignal);
}
