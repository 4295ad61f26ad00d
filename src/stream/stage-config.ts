import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import { checkLinkConfig } from '../link/link-config.ts';
import { parseBrokerList, type KafkaConnectionConfig } from './kafka-client.ts';
import { checkedKafkaSaslSchema, checkedKafkaTlsSchema, KAFKA_SECURITY_ENV_VARS, tlsVariablesConflict } from './kafka-security.ts';
import { asBool, asString, getPath, refusedKey, setPath, type ConfigSources, type EnvParser, type EnvVar } from './env-vars.ts';
import type { SchemaRegistryOptions } from './avro/confluent-avro-codec.ts';
import { resolveSchemaRegistry, SCHEMA_REGISTRY_ENV_VARS, schemaRegistrySectionSchema } from './avro/schema-registry-config.ts';
import { DEFAULT_LABEL_POLICY, DEFAULT_RECURRENCE_EXPONENT, SELECTION_POLICIES } from './label-selection/selection-policy.ts';
import { MEMORY_SPLIT_SEED } from './label-selection/note-draw.ts';
import { settingWithoutItsTopic } from './topic-bound-settings.ts';

/**
 * Everything `cuilink run` can be told, validated once at start. Sources, later winning: the
 * defaults below, a JSON file (`--config FILE`), environment variables (ENV_VARS). docs/stream.md
 * lists every option with its default; keep the two in step.
 */
const topicName = z.string().regex(/^[A-Za-z0-9._-]{1,249}$/, 'a topic name is 1-249 of [A-Za-z0-9._-]');

/**
 * The longest delay a Node timer holds (2^31 - 1 ms, 24.8 days): a longer one fires at once (a
 * TimeoutOverflowWarning), so a drain timeout or poll interval meant to be long would act as 1 ms.
 * Kafka's requests carry the session and transaction timeouts and the fetch size as int32 too.
 */
const INT32_MAX = 2_147_483_647;
const durationMs = (min: number) => z.number().int().min(min).max(INT32_MAX, `at most ${INT32_MAX} ms (24.8 days): a longer timer fires at once`);

export const stageConfigSchema = z
  .object({
    /** host:port list; `cuilink run` refuses an empty one (exit 2); `cuilink demo` starts its own broker instead. */
    brokers: z.array(z.string().regex(/^[^\s:]+:\d{1,5}$/, 'a broker is host:port')).default([]),
    clientId: z.string().min(1).default('cuilink'),
    groupId: z.string().min(1).default('cuilink-linker'),
    topics: z
      .object({
        input: topicName.default('cuilink.notes'),
        output: topicName.default('cuilink.linked'),
        deadLetter: topicName.default('cuilink.dead-letter'),
        /** Where mentions the stage is unsure of also go (ReviewMention Avro, docs/confidence.md); none when absent. */
        review: topicName.optional(),
        /** Where the learn stream's label requests go (LabelRequest Avro, docs/active-learning.md); no selection when absent. */
        labelRequests: topicName.optional(),
        /** Where the measure stream's label requests go (every mention of a random slice of notes); none when absent. */
        measureRequests: topicName.optional(),
        /**
         * Largest record batch the output and dead-letter topics accept. Read from the topics'
         * `max.message.bytes` at start (describeConfigs) when absent; set it when the stage may not
         * describe topic configs. A lower value than the topics' is safe, a higher one is learned down.
         */
        maxMessageBytes: z.number().int().min(4096).optional(),
      })
      .strict()
      .default({}),
    batching: z
      .object({
        /** A linking batch holds at most this many mentions (whole notes; a bigger note goes alone). */
        maxMentions: z.number().int().min(1).max(100_000).default(128),
        /** How long an idle linker waits for a partial batch to fill (0: links what is queued at once); a busy one's arrivals wait for it instead. */
        maxWaitMs: z.number().int().min(0).max(60_000).default(0),
        /** Above this many queued or linking mentions the consumer is paused until half have drained. */
        maxInFlightMentions: z.number().int().min(1).max(1_000_000).default(1024),
        /** Linking batches in progress at once: 2 overlaps one batch's main-thread work with the other's inference. */
        maxConcurrentBatches: z.number().int().min(1).max(16).default(2),
      })
      .strict()
      .default({}),
    limits: z
      .object({
        maxNoteChars: z.number().int().min(1).default(100_000),
        maxMentionsPerNote: z.number().int().min(1).default(1_000),
        maxMentionChars: z.number().int().min(1).default(512),
      })
      .strict()
      .default({}),
    /** at-least-once: offsets committed after the output is acknowledged. exactly-once: Kafka transactions. */
    delivery: z.enum(['at-least-once', 'exactly-once']).default('at-least-once'),
    /** exactly-once only: stable per instance (a restart with the same id fences its predecessor). Default `<groupId>-<clientId>`. */
    transactionalId: z.string().min(1).optional(),
    transactionTimeoutMs: durationMs(1000).default(30_000),
    consumer: z
      .object({
        sessionTimeoutMs: durationMs(6000).default(30_000),
        heartbeatIntervalMs: durationMs(100).default(3_000),
        /** Partitions processed at once; their notes share linking batches. */
        partitionsConsumedConcurrently: z.number().int().min(1).max(256).default(4),
        /** Where a new consumer group starts. */
        fromBeginning: z.boolean().default(true),
        maxBytesPerPartition: z.number().int().min(1024).max(INT32_MAX, `at most ${INT32_MAX}: Kafka's fetch request carries it as a 32-bit integer`).default(1_048_576),
      })
      .strict()
      .default({}),
    retry: z
      .object({
        /** Attempts for a retriable failure (broker, timeout, retriable CuilinkError) before the batch is handed back to Kafka. */
        maxAttempts: z.number().int().min(1).max(1000).default(8),
        initialBackoffMs: durationMs(1).default(200),
        maxBackoffMs: durationMs(1).default(10_000),
      })
      .strict()
      .default({}),
    /**
     * The dead-letter-rate breaker (src/stream/dead-letter-breaker.ts): when more than `maxShare`
     * of the last `windowRecords` input records were dead-lettered, the stage pauses, goes unready
     * and commits nothing until the share falls under `maxShare` (the input is then resumed) or the stage restarts.
     */
    deadLetterBreaker: z
      .object({
        enabled: z.boolean().default(true),
        windowRecords: z.number().int().min(1).max(1_000_000).default(200),
        maxShare: z.number().min(0).lt(1).default(0.5),
        /** Records the window must hold before its share counts (default: windowRecords). */
        minRecords: z.number().int().min(1).optional(),
      })
      .strict()
      .default({}),
    /** On SIGTERM/SIGINT: time to drain in-flight batches and commit before exiting anyway. */
    drainTimeoutMs: durationMs(0).default(30_000),
    http: z
      .object({
        enabled: z.boolean().default(true),
        host: z.string().default('0.0.0.0'),
        /** 0 picks a free port (logged at start). */
        port: z.number().int().min(0).max(65535).default(8080),
      })
      .strict()
      .default({}),
    health: z
      .object({
        /** How often the linker health probe runs one short mention through the models (src/stream/linker-health-probe.ts), ms. */
        probeIntervalMs: durationMs(100).default(30_000),
      })
      .strict()
      .default({}),
    telemetry: z
      .object({
        serviceName: z.string().min(1).default('cuilink'),
        /** OTLP/HTTP base URL; traces and metrics are exported there when set. */
        otlpEndpoint: z.string().url().optional(),
        metricExportIntervalMs: durationMs(100).default(15_000),
        prometheus: z.boolean().default(true),
        /** Allow note and mention text in logs and spans. Off: they carry ids, offsets and codes only. */
        logPhi: z.boolean().default(false),
        logLevel: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
        kafkaLogLevel: z.enum(['nothing', 'error', 'warn', 'info', 'debug']).default('warn'),
      })
      .strict()
      .default({}),
    /**
     * Kafka TLS: `true` (Node's CAs) or `{ caFile, certFile, keyFile, keyPassphraseFile, servername,
     * rejectUnauthorized }` (src/stream/kafka-security.ts, docs/security.md). The files are read and
     * checked here, at start: a problem is an issue on its field (and so names the variable that set it).
     */
    ssl: checkedKafkaTlsSchema.optional(),
    /** Kafka SASL: plain / scram-sha-256 / scram-sha-512 (password or passwordFile), or oauthbearer (OIDC client credentials). */
    sasl: checkedKafkaSaslSchema.optional(),
    avro: z
      .object({
        /** `plain`: Avro single-object encoding (C3 01 + CRC-64-AVRO fingerprint). `confluent`: magic byte + registry id. */
        wireFormat: z.enum(['plain', 'confluent']).default('plain'),
        /** Deprecated: schemaRegistry.url. */
        registryUrl: z.string().url().optional(),
      })
      .strict()
      .default({}),
    /**
     * The Confluent wire format's registry (src/stream/avro/schema-registry-config.ts): url, auth
     * (basic or bearer), tls (caFile, certFile, keyFile) and subjectNameStrategy (topic by default).
     */
    schemaRegistry: schemaRegistrySectionSchema.default({}),
    linker: z
      .object({
        /** Index directory; the default index (HPO + default model, built once and cached) when absent. */
        indexDir: z.string().min(1).optional(),
        modelDir: z.string().min(1).optional(),
        rerankerDir: z.union([z.string().min(1), z.literal(false)]).optional(),
        threads: z.number().int().min(1).optional(),
        /** Execution provider (docs/gpu.md): auto = CUDA when its provider loads, else the CPU. */
        provider: z.enum(['auto', 'cuda', 'cpu']).default('auto'),
        deviceId: z.number().int().min(0).default(0),
        /** Model file precision; int8 on the CPU and fp16 on CUDA when absent. */
        precision: z.enum(['int8', 'fp16', 'fp32']).optional(),
        /** Labelled-mention memory root (or version directory); its CURRENT is polled and swapped live. */
        memoryDir: z.string().min(1).optional(),
        /** How often the memory root's CURRENT is polled, ms. */
        memoryPollMs: durationMs(0).default(1000),
        /** Confidence calibration file (cuilink calibrate), or false for none; the shipped one when it fits the models if absent. */
        calibration: z.union([z.string().min(1), z.literal(false)]).optional(),
      })
      .strict()
      .default({}),
    review: z
      .object({
        /** With topics.review: a mention whose confidence is under this, or that is NIL, is also sent there. */
        belowConfidence: z.number().min(0).max(1).default(0.5),
      })
      .strict()
      .default({}),
    labels: z
      .object({
        /** The learn stream's policy (src/stream/label-selection/selection-policy.ts), chosen on the tune split by bench:active. */
        policy: z.enum(SELECTION_POLICIES).default(DEFAULT_LABEL_POLICY),
        /** Learn-stream labels asked per window (per instance). */
        budget: z.number().int().min(0).default(100),
        /** The budget's window, ms (an hour by default). */
        windowMs: z.number().int().min(1000).default(3_600_000),
        /** α of confidence-recurrence: priority = (1 − confidence) × recurrence^α. */
        recurrenceExponent: z.number().min(0).max(4).default(DEFAULT_RECURRENCE_EXPONENT),
        /** Share of notes whose mentions are all asked for measurement; the memory updater learns the others (its --learn-fraction is 1 − this). */
        measureFraction: z.number().min(0).max(1).default(0.02),
        /** Measure-stream labels asked per window at most. */
        measureBudget: z.number().int().min(0).default(500),
        /** Seed of the learn/measure split: the memory updater's and evaluator's --split-seed. */
        splitSeed: z.number().int().default(MEMORY_SPLIT_SEED),
        /** Candidates waiting for a window at most; surfaces remembered at most. */
        maxPool: z.number().int().min(1).default(100_000),
        maxSurfaces: z.number().int().min(1).default(200_000),
      })
      .strict()
      .default({}),
    /** Link options (src/link/link-config.ts: topK, retrieveK, rerank, nil, typeFilter, abbreviations). */
    link: z.record(z.unknown()).default({}),
  })
  .strict()
  .superRefine((config, ctx) => {
    const registry = config.schemaRegistry;
    if (config.avro.wireFormat === 'confluent' && !registry.url && !config.avro.registryUrl) ctx.addIssue({ code: 'custom', path: ['schemaRegistry', 'url'], message: 'required when avro.wireFormat is confluent (avro.registryUrl is its deprecated name)' });
    if (registry.url !== undefined && config.avro.registryUrl !== undefined && registry.url !== config.avro.registryUrl) ctx.addIssue({ code: 'custom', path: ['avro', 'registryUrl'], message: `deprecated, and differs from schemaRegistry.url ${registry.url}: drop it` });
    if (registry.tls !== undefined && registry.url === undefined && config.avro.registryUrl !== undefined && !/^https:/i.test(config.avro.registryUrl)) ctx.addIssue({ code: 'custom', path: ['schemaRegistry', 'tls'], message: `set, but avro.registryUrl ${config.avro.registryUrl} is not https` });
    const { input, output, deadLetter, review, labelRequests, measureRequests } = config.topics;
    const named = [input, output, deadLetter, review, labelRequests, measureRequests].filter((t) => t !== undefined);
    if (new Set(named).size !== named.length) ctx.addIssue({ code: 'custom', path: ['topics'], message: 'input, output, deadLetter, review, labelRequests and measureRequests must be different topics' });
    const breaker = config.deadLetterBreaker;
    if (breaker.minRecords !== undefined && breaker.minRecords > breaker.windowRecords) ctx.addIssue({ code: 'custom', path: ['deadLetterBreaker', 'minRecords'], message: 'must not exceed windowRecords' });
    // Checked here, not by the Kafka client when the consumer is created: its refusal would name neither the field nor where it was set.
    const { heartbeatIntervalMs, sessionTimeoutMs } = config.consumer;
    if (heartbeatIntervalMs >= sessionTimeoutMs) ctx.addIssue({ code: 'custom', path: ['consumer', 'heartbeatIntervalMs'], message: `must be under consumer.sessionTimeoutMs (${sessionTimeoutMs}): a member that heartbeats less often than its session lasts is evicted` });
  });

export type StageConfig = z.output<typeof stageConfigSchema>;
export type StageConfigInput = z.input<typeof stageConfigSchema>;

const asInt: EnvParser = (v) => (/^-?\d+$/.test(v.trim()) ? Number(v) : v);
const asNumber: EnvParser = (v) => (/^-?\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : v);
const asReranker: EnvParser = (v) => (v === 'none' ? false : v);

/** Environment variable → config path. Documented in docs/stream.md. */
export const ENV_VARS: EnvVar[] = [
  ['CUILINK_BROKERS', ['brokers'], parseBrokerList],
  ['CUILINK_CLIENT_ID', ['clientId'], asString],
  ['CUILINK_GROUP_ID', ['groupId'], asString],
  ['CUILINK_INPUT_TOPIC', ['topics', 'input'], asString],
  ['CUILINK_OUTPUT_TOPIC', ['topics', 'output'], asString],
  ['CUILINK_DEAD_LETTER_TOPIC', ['topics', 'deadLetter'], asString],
  ['CUILINK_REVIEW_TOPIC', ['topics', 'review'], asString],
  ['CUILINK_REVIEW_BELOW', ['review', 'belowConfidence'], asNumber],
  ['CUILINK_LABEL_TOPIC', ['topics', 'labelRequests'], asString],
  ['CUILINK_MEASURE_TOPIC', ['topics', 'measureRequests'], asString],
  ['CUILINK_LABEL_POLICY', ['labels', 'policy'], asString],
  ['CUILINK_LABEL_BUDGET', ['labels', 'budget'], asInt],
  ['CUILINK_LABEL_WINDOW_MS', ['labels', 'windowMs'], asInt],
  ['CUILINK_MEASURE_FRACTION', ['labels', 'measureFraction'], asNumber],
  ['CUILINK_MEASURE_BUDGET', ['labels', 'measureBudget'], asInt],
  ['CUILINK_LABEL_SPLIT_SEED', ['labels', 'splitSeed'], asInt],
  ['CUILINK_DELIVERY', ['delivery'], asString],
  ['CUILINK_TRANSACTIONAL_ID', ['transactionalId'], asString],
  ['CUILINK_MAX_BATCH_MENTIONS', ['batching', 'maxMentions'], asInt],
  ['CUILINK_MAX_WAIT_MS', ['batching', 'maxWaitMs'], asInt],
  ['CUILINK_MAX_IN_FLIGHT_MENTIONS', ['batching', 'maxInFlightMentions'], asInt],
  ['CUILINK_MAX_CONCURRENT_BATCHES', ['batching', 'maxConcurrentBatches'], asInt],
  ['CUILINK_DRAIN_TIMEOUT_MS', ['drainTimeoutMs'], asInt],
  ['CUILINK_DEAD_LETTER_BREAKER', ['deadLetterBreaker', 'enabled'], asBool],
  ['CUILINK_DEAD_LETTER_BREAKER_WINDOW', ['deadLetterBreaker', 'windowRecords'], asInt],
  ['CUILINK_DEAD_LETTER_BREAKER_MAX_SHARE', ['deadLetterBreaker', 'maxShare'], asNumber],
  ['CUILINK_HTTP_PORT', ['http', 'port'], asInt],
  ['CUILINK_HEALTH_PROBE_INTERVAL_MS', ['health', 'probeIntervalMs'], asInt],
  ['CUILINK_OTLP_ENDPOINT', ['telemetry', 'otlpEndpoint'], asString],
  ['CUILINK_LOG_PHI', ['telemetry', 'logPhi'], asBool],
  ['CUILINK_LOG_LEVEL', ['telemetry', 'logLevel'], asString],
  // The Kafka TLS and SASL variables (CUILINK_SSL first: a TLS file variable after it makes `ssl` an object, TLS on).
  ...KAFKA_SECURITY_ENV_VARS,
  ...SCHEMA_REGISTRY_ENV_VARS.map(([name, path, parse]): EnvVar => [name, ['schemaRegistry', ...path], parse]),
  ['CUILINK_WIRE_FORMAT', ['avro', 'wireFormat'], asString],
  ['CUILINK_INDEX_DIR', ['linker', 'indexDir'], asString],
  ['CUILINK_PROVIDER', ['linker', 'provider'], asString],
  ['CUILINK_DEVICE_ID', ['linker', 'deviceId'], asInt],
  ['CUILINK_PRECISION', ['linker', 'precision'], asString],
  ['CUILINK_RERANKER', ['linker', 'rerankerDir'], asReranker],
  ['CUILINK_MAX_MESSAGE_BYTES', ['topics', 'maxMessageBytes'], asInt],
  ['CUILINK_THREADS', ['linker', 'threads'], asInt],
  ['CUILINK_LINK_CACHE_ENTRIES', ['link', 'cache', 'maxEntries'], asInt],
  ['CUILINK_LINK_CACHE_BYTES', ['link', 'cache', 'maxBytes'], asInt],
  ['CUILINK_MEMORY', ['linker', 'memoryDir'], asString],
  ['CUILINK_MEMORY_POLL_MS', ['linker', 'memoryPollMs'], asInt],
  ['CUILINK_CALIBRATION', ['linker', 'calibration'], asReranker],
];

export interface LoadStageConfigOptions {
  /** JSON file (`--config`). */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Applied last (CLI flags). */
  overrides?: Record<string, unknown>;
  /** A command's own defaults (the demo's review topic), taken where no source set the key. */
  defaults?: Record<string, unknown>;
}

/** Reads and validates the stage config; an InputError names the offending field and its source. */
export function loadStageConfig(options: LoadStageConfigOptions = {}): StageConfig {
  let raw: Record<string, unknown> = {};
  let fromFile: Record<string, unknown> | undefined;
  if (options.file) {
    let text: string;
    try {
      text = readFileSync(options.file, 'utf8');
    } catch (error) {
      throw new InputError(`cannot read config file ${options.file}: ${(error as Error).message}`, 'BAD_CONFIG');
    }
    try {
      raw = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new InputError(`config file ${options.file} is not valid JSON: ${(error as Error).message}`, 'BAD_CONFIG');
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InputError(`config file ${options.file} must hold a JSON object`, 'BAD_CONFIG');
    // Parsed again rather than cloned: structuredClone recurses, and overflows the stack on a file nested 10k deep.
    fromFile = JSON.parse(text) as Record<string, unknown>;
  }
  const env = options.env ?? process.env;
  const conflict = tlsVariablesConflict(env);
  if (conflict !== undefined) throw new InputError(conflict, 'BAD_CONFIG');
  const fromEnv: string[] = [];
  for (const [name, path, parse] of ENV_VARS) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    setPath(raw, path, parse(value));
    fromEnv.push(name);
  }
  for (const [key, value] of Object.entries(options.overrides ?? {})) setPath(raw, key.split('.'), value);
  for (const [key, value] of Object.entries(options.defaults ?? {})) if (getPath(raw, key.split('.')) === undefined) setPath(raw, key.split('.'), value);
  const sources: ConfigSources = { raw, fromFile, file: options.file, variables: ENV_VARS, fromEnv, overrides: Object.keys(options.overrides ?? {}).map((key) => key.split('.')) };
  const parsed = stageConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(`${refusedKey(issue.path.map(String), sources)}: ${issue.message}`, 'BAD_CONFIG');
  }
  const inert = settingWithoutItsTopic(raw, parsed.data.topics);
  if (inert !== undefined) {
    const topics = inert.needs.map((topic) => `topics.${topic}${envNameOf(['topics', topic])}`).join(' or ');
    throw new InputError(`${refusedKey(inert.setting.split('.'), sources)} has no effect without ${topics}: set ${inert.needs.length > 1 ? 'one of those topics' : 'that topic'} too, or drop '${inert.setting}'`, 'BAD_CONFIG');
  }
  // Checked here rather than by parseLinkConfig, so that the refusal names the file or variable that set the key.
  const link = checkLinkConfig(parsed.data.link);
  if ('problem' in link) {
    throw new InputError(`${refusedKey(link.path === '' ? ['link'] : ['link', ...link.path.split('.')], sources)}: ${link.problem}`, 'BAD_CONFIG');
  }
  // The registry's secret and PEM files are read now, so that a bad one stops the start with its field and path.
  const envNames = Object.fromEntries(ENV_VARS.filter(([name, path]) => fromEnv.includes(name) && path[0] === 'schemaRegistry').map(([name, path]) => [path.slice(1).join('.'), `environment variable ${name}`]));
  const fileOrigin = options.file ? `config ${options.file}: ` : '';
  const fileNames = Object.fromEntries(['auth.basic.passwordFile', 'auth.bearer.tokenFile', 'tls.caFile', 'tls.certFile', 'tls.keyFile'].map((path) => [path, envNames[path] ?? `${fileOrigin}schemaRegistry.${path}`]));
  schemaRegistryOf(parsed.data, fileNames);
  return parsed.data;
}

/** ` (CUILINK_X)` for a path an environment variable sets, else nothing. */
function envNameOf(path: string[]): string {
  const name = ENV_VARS.find(([, p]) => p.join('.') === path.join('.'))?.[0];
  return name === undefined ? '' : ` (${name})`;
}

/**
 * The schema registry client's options (files read and checked), or undefined when the stage
 * writes the plain format. `names`: how errors name each file field (default `schemaRegistry.<path>`).
 */
export function schemaRegistryOf(config: StageConfig, names?: Partial<Record<string, string>>): SchemaRegistryOptions | undefined {
  if (config.avro.wireFormat !== 'confluent') return undefined;
  const url = config.schemaRegistry.url ?? config.avro.registryUrl;
  return resolveSchemaRegistry({ ...config.schemaRegistry, url }, 'schemaRegistry', names);
}

/** Every topic the stage reads or writes: the three it always has, then the optional ones configured. */
export function stageTopicsOf(config: StageConfig): string[] {
  const { input, output, deadLetter, review, labelRequests, measureRequests } = config.topics;
  return [input, output, deadLetter, review, labelRequests, measureRequests].filter((t) => t !== undefined);
}

/** The connection part of the config in the shape src/stream/kafka-client.ts takes. */
export function connectionOf(config: StageConfig, brokers: string[] = config.brokers): KafkaConnectionConfig {
  return {
    brokers,
    clientId: config.clientId,
    ssl: config.ssl,
    sasl: config.sasl,
    logLevel: config.telemetry.kafkaLogLevel,
  };
}
