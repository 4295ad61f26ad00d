import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag } from '../args.ts';
import { CuilinkError, InputError } from '../../kb/errors.ts';
import { createKafkaClient, parseBrokerList } from '../../stream/kafka-client.ts';
import { brokerFailureLine } from '../broker-failure.ts';
import { connectionOf, loadStageConfig, type StageConfig } from '../../stream/stage-config.ts';
import { createPlannedTopics, describePlannedTopics, differences, planTopics, settingsText, TOPIC_DEFAULTS, TOPIC_LIMITS, topicLabel, type PlannedTopic, type TopicPlanOptions } from '../../stream/topic-plan.ts';

const SETTINGS_HELP = `Topics (docs/topics.md): the stage config's topics.input, output, deadLetter and, when set,
review, labelRequests and measureRequests, plus the gold topic of 'cuilink evaluator',
'cuilink memory updater' and 'cuilink gold-sample' (--gold-topic; they read the stage's input and
output topics under those names too). Config: --config FILE, then CUILINK_* variables, as
'cuilink run' reads them (give it the same ones).`;

const CONNECTION_HELP = `  --config FILE             stage configuration (JSON), as given to 'cuilink run'
  --brokers H:P,H:P         Kafka bootstrap brokers (overrides CUILINK_BROKERS and the config's "brokers")
  --gold-topic T|none       the gold topic (default ${TOPIC_DEFAULTS.goldTopic}; none: leave it out)`;

const createUsage = `Usage: cuilink topics create [--config FILE] [--brokers H:P,...] [--partitions N] [--replication N]
                             [--max-message-bytes N] [--retention-ms N] [--dead-letter-retention-ms N] [--dry-run]

Creates the topics the stage, the evaluator and the memory updater use that do not exist yet, and
prints one line per topic: created, or exists (with the settings it has). An existing topic is
never altered: one with fewer partitions or a lower max.message.bytes than asked is reported only.

${SETTINGS_HELP}

Options:
${CONNECTION_HELP}
  --partitions N            partitions of each created topic (default ${TOPIC_DEFAULTS.partitions}: local; production: the most
                            stage instances that should share the input)
  --replication N           replication factor (default ${TOPIC_DEFAULTS.replicationFactor}: the local one-node broker; production: 3)
  --max-message-bytes N     max.message.bytes of the input-side topics (default ${TOPIC_DEFAULTS.maxMessageBytes}, Kafka's); the output topic
                            gets at least the largest LinkedNote the config allows (limits.maxMentionsPerNote x
                            link.topK candidates, rounded up to MiB), the dead-letter topic this + 65536
  --retention-ms N          retention.ms of each topic but the dead-letter one (default ${TOPIC_DEFAULTS.retentionMs}, 7 days; --retention-ms=-1: forever)
  --dead-letter-retention-ms N  retention.ms of the dead-letter topic (default ${TOPIC_DEFAULTS.deadLetterRetentionMs}, 30 days; -1 forever)
  --dry-run                 print what would be created, create nothing
  -h, --help                this text

Exit codes: 0 every topic exists now; 2 a bad flag or config; 3 the brokers could not be reached or
refused (e.g. a replication factor above the broker count).`;

const describeUsage = `Usage: cuilink topics describe [--config FILE] [--brokers H:P,...] [--gold-topic T|none]

Prints one line per topic the stage, the evaluator and the memory updater use: whether it exists,
its partitions, replication factor, max.message.bytes, retention.ms and records (high watermark
minus log start, summed over partitions; transaction markers count too).

${SETTINGS_HELP}

Options:
${CONNECTION_HELP}
  -h, --help                this text

Exit codes: 0 every topic exists; 1 a topic is missing (create it with 'cuilink topics create');
2 a bad flag or config; 3 the brokers could not be reached.`;

const CONNECTION_FLAGS = {
  config: { type: 'string' },
  brokers: { type: 'string' },
  'gold-topic': { type: 'string' },
} as const;

const BROKER = /^[^\s:]+:\d{1,5}$/;

/** The stage config as 'cuilink run' reads it, with --brokers over it. */
export function topicsConfigFromFlags(values: { config?: string; brokers?: string }, env: NodeJS.ProcessEnv = process.env): StageConfig {
  const overrides: Record<string, unknown> = {};
  if (values.brokers !== undefined) {
    const brokers = parseBrokerList(values.brokers);
    if (brokers.length === 0) throw new InputError('--brokers is empty: give host:port[,host:port]', 'BAD_FLAGS');
    const bad = brokers.find((b) => !BROKER.test(b));
    if (bad !== undefined) throw new InputError(`--brokers: '${bad}' is not host:port`, 'BAD_FLAGS');
    overrides.brokers = brokers;
  }
  return loadStageConfig({ file: values.config, env, overrides });
}

/** A retention flag: -1 (forever) or at least a minute. */
function parseRetentionFlag(value: string | undefined, flag: string, fallback: number): number {
  const ms = parseNumberFlag(value, flag, fallback, { min: -1, integer: true });
  if (ms !== -1 && ms < 60_000) throw new InputError(`--${flag} must be -1 (keep forever) or at least 60000 (a minute), got ${ms}`, 'BAD_FLAGS');
  return ms;
}

/** The plan options of `topics create` / `describe` flags; a bad value is an InputError naming the flag. */
export function topicPlanOptionsFromFlags(values: { partitions?: string; replication?: string; 'max-message-bytes'?: string; 'retention-ms'?: string; 'dead-letter-retention-ms'?: string; 'gold-topic'?: string }): TopicPlanOptions {
  const gold = values['gold-topic'];
  if (gold !== undefined && gold.length === 0) throw new InputError("--gold-topic is empty: give a topic name or 'none'", 'BAD_FLAGS');
  return {
    partitions: parseNumberFlag(values.partitions, 'partitions', TOPIC_DEFAULTS.partitions, { ...TOPIC_LIMITS.partitions, integer: true }),
    replicationFactor: parseNumberFlag(values.replication, 'replication', TOPIC_DEFAULTS.replicationFactor, { ...TOPIC_LIMITS.replicationFactor, integer: true }),
    maxMessageBytes: parseNumberFlag(values['max-message-bytes'], 'max-message-bytes', TOPIC_DEFAULTS.maxMessageBytes, { ...TOPIC_LIMITS.maxMessageBytes, integer: true }),
    retentionMs: parseRetentionFlag(values['retention-ms'], 'retention-ms', TOPIC_DEFAULTS.retentionMs),
    deadLetterRetentionMs: parseRetentionFlag(values['dead-letter-retention-ms'], 'dead-letter-retention-ms', TOPIC_DEFAULTS.deadLetterRetentionMs),
    goldTopic: gold === 'none' ? null : gold,
  };
}

export function requireBrokers(config: StageConfig): void {
  if (config.brokers.length === 0) throw new InputError('no brokers: pass --brokers host:port, set CUILINK_BROKERS or "brokers" in --config (\'npm run kafka:start\' runs one at 127.0.0.1:9092)', 'NO_BROKERS');
}

/** Broker failures (unreachable, refused) are exit 3 with the one-line reason; flag and config errors stay exit 2. */
export async function brokerStep(command: string, step: () => Promise<number>): Promise<number> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof InputError || !(error instanceof CuilinkError)) throw error;
    console.error(`cuilink ${command}: ${brokerFailureLine(error)}${error.code === 'KAFKA_INVALID_REPLICATION_FACTOR' ? ' (--replication is more than the brokers that are up)' : ''}`);
    return 3;
  }
}

export const topicsCreate: Command = {
  name: 'topics create',
  summary: 'Create the topics the stage, evaluator and memory updater use (missing ones only)',
  usage: createUsage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...CONNECTION_FLAGS,
      partitions: { type: 'string' },
      replication: { type: 'string' },
      'max-message-bytes': { type: 'string' },
      'retention-ms': { type: 'string' },
      'dead-letter-retention-ms': { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
    });
    const options = topicPlanOptionsFromFlags(values);
    const config = topicsConfigFromFlags(values);
    const plan = planTopics(config, options);
    requireBrokers(config);
    const kafka = createKafkaClient(connectionOf(config), () => {});
    return brokerStep('topics create', async () => {
      if (values['dry-run']) {
        for (const state of await describePlannedTopics(kafka, plan)) {
          if (!state.exists) console.log(`would create ${topicLabel(state.planned)}: ${settingsText(state.planned)}`);
          else console.log(existsLine(state.planned, state, differences(state)));
        }
        return 0;
      }
      for (const report of await createPlannedTopics(kafka, plan)) {
        if (report.created) console.log(`created ${topicLabel(report.state.planned)}: ${settingsText(report.state)}`);
        else console.log(existsLine(report.state.planned, report.state, report.notes));
      }
      return 0;
    });
  },
};

function existsLine(planned: PlannedTopic, state: Parameters<typeof settingsText>[0], notes: string[]): string {
  return `exists ${topicLabel(planned)}: ${settingsText(state)}${notes.length > 0 ? `; ${notes.join('; ')}` : ''}`;
}

export const topicsDescribe: Command = {
  name: 'topics describe',
  summary: 'One line per topic the stage, evaluator and memory updater use: exists, partitions, settings; exit 1 if one is missing',
  usage: describeUsage,
  async run(argv) {
    const { values } = parseFlags(argv, CONNECTION_FLAGS);
    const options = topicPlanOptionsFromFlags(values);
    const config = topicsConfigFromFlags(values);
    const plan = planTopics(config, options);
    requireBrokers(config);
    const kafka = createKafkaClient(connectionOf(config), () => {});
    return brokerStep('topics describe', async () => {
      const states = await describePlannedTopics(kafka, plan, { records: true });
      for (const state of states) {
        if (!state.exists) {
          console.log(`missing ${topicLabel(state.planned)}`);
          continue;
        }
        console.log(`exists ${topicLabel(state.planned)}: ${settingsText(state)}, records ${state.records ?? '?'}${state.ready === false ? '; a partition has no leader' : ''}`);
      }
      const missing = states.filter((s) => !s.exists).map((s) => s.planned.topic);
      if (missing.length === 0) return 0;
      console.error(`cuilink topics describe: ${missing.length} of ${states.length} topics missing (${missing.join(', ')}): create them with '${createCommandFor(values)}'`);
      return 1;
    });
  },
};

/** `cuilink topics create --config stage.json`: the command that creates what this config needs. */
export function createCommandFor(values: { config?: string; 'gold-topic'?: string }): string {
  return ['cuilink topics create', ...(values.config === undefined ? [] : [`--config ${values.config}`]), ...(values['gold-topic'] === undefined ? [] : [`--gold-topic ${values['gold-topic']}`])].join(' ');
}
