import type { ConnectionOptions } from 'node:tls';
import { Kafka, logLevel as KafkaLogLevel, type KafkaConfig, type LogEntry, type SASLOptions } from 'kafkajs';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';

/**
 * The one place that constructs a Kafka client. Everything else receives a `Kafka` from here, so
 * that replacing kafkajs (no release since 2023) with @confluentinc/kafka-javascript, whose
 * KafkaJS-compatible API takes the same config under `kafkaJS`, touches this file only.
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

/** Where client log lines go; the default writes one JSON line to stderr. */
export type KafkaLogSink = (entry: { level: string; namespace: string; message: string; extra: Record<string, unknown> }) => void;

const LEVELS: Record<ValidatedKafkaConnection['logLevel'], KafkaLogLevel> = {
  nothing: KafkaLogLevel.NOTHING,
  error: KafkaLogLevel.ERROR,
  warn: KafkaLogLevel.WARN,
  info: KafkaLogLevel.INFO,
  debug: KafkaLogLevel.DEBUG,
};

const LEVEL_NAMES: Record<number, string> = {
  [KafkaLogLevel.ERROR]: 'error',
  [KafkaLogLevel.WARN]: 'warn',
  [KafkaLogLevel.INFO]: 'info',
  [KafkaLogLevel.DEBUG]: 'debug',
};

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

export function createKafkaClient(config: KafkaConnectionConfig, sink: KafkaLogSink = stderrSink): Kafka {
  const valid = validateKafkaConnection(config);
  const kafkaConfig: KafkaConfig = {
    brokers: valid.brokers,
    clientId: valid.clientId,
    connectionTimeout: valid.connectionTimeoutMs,
    requestTimeout: valid.requestTimeoutMs,
    logLevel: LEVELS[valid.logLevel],
    logCreator: () => (entry: LogEntry) => {
      const { message, timestamp: _timestamp, logger: _logger, ...extra } = entry.log;
      sink({ level: LEVEL_NAMES[entry.level] ?? 'info', namespace: entry.namespace, message, extra });
    },
  };
  if (valid.ssl !== undefined) kafkaConfig.ssl = valid.ssl as ConnectionOptions | boolean;
  if (valid.sasl !== undefined) kafkaConfig.sasl = valid.sasl as SASLOptions;
  if (valid.retry !== undefined) kafkaConfig.retry = valid.retry;
  return new Kafka(kafkaConfig);
}

function stderrSink(entry: Parameters<KafkaLogSink>[0]): void {
  // A broker's error response (coordinator loading, leader moved) that kafkajs retries by itself is
  // no news to a command's user: if the retries run out, the command fails with the error anyway.
  if (entry.level === 'error' && entry.message.startsWith('Response ')) return;
  process.stderr.write(`${JSON.stringify({ level: entry.level, component: `kafka.${entry.namespace}`, message: entry.message, ...entry.extra })}\n`);
}
