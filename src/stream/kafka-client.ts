import type { ConnectionOptions } from 'node:tls';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import type { KafkaClient } from './kafka/client-types.ts';
import { PlatformaticKafkaClient, type ConnectionBase } from './kafka/platformatic-client.ts';

/**
 * The one place that constructs a Kafka client from cuilink's connection config. Everything else
 * receives our own KafkaClient interface (src/stream/kafka/client-types.ts); the implementation is
 * @platformatic/kafka (maintained, KIP-447 transactional offset commits).
 */

const saslSchema = z.object({
  mechanism: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']),
  username: z.string().min(1),
  password: z.string(),
});

const retrySchema = z
  .object({
    retries: z.number().int().min(0).optional(),
    initialRetryTime: z.number().int().positive().optional(),
    maxRetryTime: z.number().int().positive().optional(),
  })
  .strict();

export const kafkaConnectionSchema = z
  .object({
    brokers: z.array(z.string().regex(/^[^\s:]+:\d{1,5}$/, 'a broker is host:port')).min(1, 'at least one broker is required'),
    clientId: z.string().min(1).default('cuilink'),
    /** `true` for TLS with the system CAs, or Node TLS options (ca, cert, key, servername...) passed through. */
    ssl: z.union([z.boolean(), z.record(z.unknown())]).optional(),
    sasl: saslSchema.optional(),
    connectionTimeoutMs: z.number().int().positive().default(3000),
    requestTimeoutMs: z.number().int().positive().default(30000),
    retry: retrySchema.optional(),
    logLevel: z.enum(['nothing', 'error', 'warn', 'info', 'debug']).default('warn'),
  })
  .strict();

export type KafkaConnectionConfig = z.input<typeof kafkaConnectionSchema>;
export type ValidatedKafkaConnection = z.output<typeof kafkaConnectionSchema>;

/** Where client log lines go; the default writes one plain line to stderr (the CLI tools'). */
export type KafkaLogSink = (entry: { level: string; namespace: string; message: string; extra: Record<string, unknown> }) => void;

/** Validates a connection config once, at entry; a bad one is an InputError naming the field. */
export function validateKafkaConnection(config: KafkaConnectionConfig): ValidatedKafkaConnection {
  const parsed = kafkaConnectionSchema.safeParse(config);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(`invalid Kafka connection config: ${issue.path.join('.') || '(root)'}: ${issue.message}`, 'INVALID_CONFIG');
  }
  return parsed.data;
}

/** `host:port,host:port` (CUILINK_BROKERS, --brokers) as a list; blanks are dropped. */
export function parseBrokerList(value: string): string[] {
  return value
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
}

const SASL_MECHANISMS = { plain: 'PLAIN', 'scram-sha-256': 'SCRAM-SHA-256', 'scram-sha-512': 'SCRAM-SHA-512' } as const;
const LEVEL_RANK: Record<ValidatedKafkaConnection['logLevel'], number> = { nothing: 0, error: 1, warn: 2, info: 3, debug: 4 };
/** A broker that keeps failing is reported once per this interval, not once per reconnect attempt. */
const BROKER_FAILURE_REPORT_MS = 60_000;
/**
 * The default sink (the CLI tools' stderr) stays quiet this long after the client is made: a broker
 * that cannot be reached at start is the command's own one-line error (src/cli/main.ts, exit 3),
 * not a warning before it; one lost later is reported.
 */
const TOOL_START_QUIET_MS = 30_000;
/** Every broker address a client of this process was given: the tools' one-line exit names them. */
const brokersInUse = new Set<string>();

/** The broker addresses this process's Kafka clients were given, in the order first seen. */
export function kafkaBrokersInUse(): string[] {
  return [...brokersInUse];
}


export function createKafkaClient(config: KafkaConnectionConfig, sink: KafkaLogSink = stderrSink): KafkaClient {
  const valid = validateKafkaConnection(config);
  for (const broker of valid.brokers) brokersInUse.add(broker);
  const createdAt = Date.now();
  const base: ConnectionBase = {
    clientId: valid.clientId,
    bootstrapBrokers: valid.brokers,
    connectTimeout: valid.connectionTimeoutMs,
    timeout: valid.requestTimeoutMs,
  };
  if (valid.ssl !== undefined && valid.ssl !== false) base.tls = valid.ssl === true ? {} : (valid.ssl as ConnectionOptions);
  if (valid.sasl !== undefined) base.sasl = { mechanism: SASL_MECHANISMS[valid.sasl.mechanism], username: valid.sasl.username, password: valid.sasl.password };
  if (valid.retry?.retries !== undefined) base.retries = valid.retry.retries;
  if (valid.retry?.initialRetryTime !== undefined) base.retryDelay = valid.retry.initialRetryTime;
  const reported = new Map<string, number>();
  const onBrokerFailed = (broker: string): void => {
    if (LEVEL_RANK[valid.logLevel] < LEVEL_RANK.warn) return;
    const now = Date.now();
    if (sink === stderrSink && now - createdAt < TOOL_START_QUIET_MS) return;
    if (now - (reported.get(broker) ?? 0) < BROKER_FAILURE_REPORT_MS) return;
    reported.set(broker, now);
    sink({ level: 'warn', namespace: 'connection', message: 'cannot connect to broker; retrying', extra: { broker } });
  };
  return new PlatformaticKafkaClient(base, onBrokerFailed);
}

/** The CLI tools' sink: one plain line on stderr (no JSON: the tools are read by people; the stage logs through its own logger). */
function stderrSink(entry: Parameters<KafkaLogSink>[0]): void {
  const broker = typeof entry.extra.broker === 'string' ? ` ${entry.extra.broker}` : '';
  const message = entry.message === 'cannot connect to broker; retrying' ? `cannot connect to Kafka broker${broker}; retrying` : `${entry.message}${broker}`;
  process.stderr.write(`cuilink: ${message}\n`);
}
