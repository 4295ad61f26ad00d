import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import type { KafkaClient } from './kafka/client-types.ts';
import { PlatformaticKafkaClient, type ConnectionBase } from './kafka/platformatic-client.ts';
import { checkedKafkaSaslSchema, checkedKafkaTlsSchema, connectionFieldName, resolveSasl, resolveTls, type FieldNamer, type ResolvedKafkaSecurity } from './kafka-security.ts';

/**
 * The one place that constructs a Kafka client from cuilink's connection config. Everything else
 * receives our own KafkaClient interface (src/stream/kafka/client-types.ts); the implementation is
 * @platformatic/kafka (maintained, KIP-447 transactional offset commits).
 */

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
    /** `true` for TLS with Node's CAs, or certificate files (caFile, certFile, keyFile…; kafka-security.ts), read and checked when the client is built. */
    ssl: checkedKafkaTlsSchema.optional(),
    /** plain / scram-sha-256 / scram-sha-512 (password or passwordFile), or oauthbearer (OIDC client credentials). */
    sasl: checkedKafkaSaslSchema.optional(),
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

/**
 * Validates a connection config once, at entry; a bad one is an InputError naming the field (by
 * `name`, e.g. the environment variable that set it, when given).
 */
export function validateKafkaConnection(config: KafkaConnectionConfig, name?: FieldNamer): ValidatedKafkaConnection {
  const parsed = kafkaConnectionSchema.safeParse(config);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.join('.') || '(root)';
    throw new InputError(name === undefined ? `invalid Kafka connection config: ${path}: ${issue.message}` : `${name(path)}: ${issue.message}`, 'INVALID_CONFIG');
  }
  return parsed.data;
}

/**
 * The client's TLS and SASL options: reads the certificate, key, password and secret files and
 * checks them (an InputError of one line naming the field, via `name`, and the file). Run at
 * start by whoever knows where a field came from; createKafkaClient runs it again.
 */
export function resolveKafkaSecurity(valid: ValidatedKafkaConnection, name: FieldNamer = connectionFieldName): ResolvedKafkaSecurity {
  const security: ResolvedKafkaSecurity = {};
  const tls = resolveTls(valid.ssl, name);
  if (tls !== undefined) security.tls = tls;
  const sasl = resolveSasl(valid.sasl, name, valid.requestTimeoutMs);
  if (sasl !== undefined) security.sasl = sasl;
  return security;
}

/** `host:port,host:port` (CUILINK_BROKERS, --brokers) as a list; blanks are dropped. */
export function parseBrokerList(value: string): string[] {
  return value
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
}

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
  const security = resolveKafkaSecurity(valid);
  if (security.tls !== undefined) base.tls = security.tls;
  if (security.sasl !== undefined) base.sasl = security.sasl;
  if (valid.retry?.retries !== undefined) base.retries = valid.retry.retries;
  const { initialRetryTime, maxRetryTime } = valid.retry ?? {};
  if (initialRetryTime !== undefined || maxRetryTime !== undefined) {
    // Exponential from initialRetryTime, capped at maxRetryTime (the library's own default is a flat 1 s).
    const initial = initialRetryTime ?? 1000;
    const ceiling = maxRetryTime ?? Number.POSITIVE_INFINITY;
    base.retryDelay = (_client, _operation, attempt) => Math.min(ceiling, initial * 2 ** (attempt - 1));
  }
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
