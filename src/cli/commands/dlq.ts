import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag } from '../args.ts';
import { CuilinkError, InputError } from '../../kb/errors.ts';
import { createKafkaClient, parseBrokerList, validateKafkaConnection } from '../../stream/kafka-client.ts';
import type { KafkaClient } from '../../stream/kafka/client-types.ts';
import { createRecordCodec } from '../../stream/avro/create-record-codec.ts';
import type { RecordCodec } from '../../stream/avro/record-codec.ts';
import type { SchemaRegistryOptions } from '../../stream/avro/confluent-avro-codec.ts';
import { avroToHeaders } from '../../stream/avro/avro-conversions.ts';
import { connectionOf, loadStageConfig, schemaRegistryOf, type StageConfig } from '../../stream/stage-config.ts';
import { requireTopics } from '../../stream/topics.ts';
import { RECORD_FAULT_CODES } from '../../stream/dead-letter-policy.ts';
import { countsText, FIRST_BYTES, replayVerdict, selectDeadLetters, viewLine, viewOf, type DeadLetterEntry, type DeadLetterFilter } from '../../stream/dead-letter-replay.ts';
import { defaultLedgerTopic, ReplayLedger } from '../../stream/replay-ledger.ts';
import { readTopicToEnd } from '../../eval/topic-to-end.ts';

// `cuilink dlq inspect` and what it shares with `cuilink dlq replay` (dlq-replay.ts;
// docs/dead-letters.md): read the dead-letter topic and the replay ledger to their current ends (a
// throwaway consumer group, nothing committed), select by code, time and position, print without
// note text.

export const COMMON_HELP = `  --config FILE          the stage's config file: brokers, topics, wire format, TLS/SASL (CUILINK_* variables
                         apply as for 'cuilink run'; without it the defaults and CUILINK_* variables)
  --brokers H:P,H:P      Kafka bootstrap brokers (default: the config's brokers, or CUILINK_BROKERS)
  --schema-registry URL  read the Confluent wire format through this registry (default: the config's schemaRegistry.*, as cuilink run reads it)
  --client-id ID         Kafka client id (default cuilink-dlq)
  --topic T              the dead-letter topic (default: the config's topics.deadLetter, cuilink.dead-letter)
  --code CODE            only dead letters with this error code (repeatable, or comma-separated)
  --since TIME           only dead letters that failed at or after TIME (ISO 8601: 2025-01-31 or 2025-01-31T12:00:00Z)
  --until TIME           only dead letters that failed before TIME
  --offsets P:O,P:O      only the dead letters at these positions (partition:offset on the dead-letter topic,
                         as inspect prints them; a bare offset when the topic has one partition)
  --limit N              at most N dead letters (the first in partition and offset order)
  --ledger T             the replay ledger: what 'dlq replay --execute' sent (default: the dead-letter
                         topic's name + '.replayed')`;

const inspectUsage = `Usage: cuilink dlq inspect [options]

Reads the dead-letter topic from its start to its current end (nothing committed) and prints one
line per dead letter: its position (partition:offset), error code, stage, failedAt, the source
record (topic/partition/offset), the original value's size and sha256, whether it was cut to fit,
whether 'dlq replay' would send it (or why not: already-replayed when the replay ledger says it
was sent), and the reason; then a summary by code. Note text (PHI) is
printed only with --show-text, and so are the original's first ${FIRST_BYTES} bytes in hex (first=hidden
otherwise: a record without framing starts with its note text), which telemetry.logPhi
(CUILINK_LOG_PHI) also shows. docs/dead-letters.md.

Options:
${COMMON_HELP}
  --json                 one JSON object per line instead (the same fields), the summary last
  --show-text            also print the original as decoded NoteEvent JSON (or its bytes as text)
                         and its first bytes in hex: PHI
  -h, --help             this text`;

export const COMMON_FLAGS = {
  config: { type: 'string' },
  brokers: { type: 'string' },
  'schema-registry': { type: 'string' },
  'client-id': { type: 'string' },
  topic: { type: 'string' },
  code: { type: 'string', multiple: true },
  since: { type: 'string' },
  until: { type: 'string' },
  offsets: { type: 'string' },
  limit: { type: 'string' },
  ledger: { type: 'string' },
} as const;

/** `--code` values (repeated or comma-separated), each on the closed list of dead-letter codes. */
export function parseCodes(values: string[] | undefined): Set<string> | undefined {
  if (values === undefined) return undefined;
  const codes = values.flatMap((v) => v.split(',')).map((c) => c.trim());
  for (const code of codes) {
    if (!RECORD_FAULT_CODES.has(code)) throw new InputError(`--code '${code}' is not a dead-letter code; the codes are ${[...RECORD_FAULT_CODES].join(', ')}`, 'BAD_FLAGS');
  }
  return new Set(codes);
}

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Whether year-month-day is a day of the calendar: Date.parse rolls 2025-02-30 over to 2025-03-02 instead of refusing it. */
function isCalendarDate(year: string, month: string, day: string): boolean {
  const date = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  date.setUTCFullYear(Number(year));
  return date.getUTCFullYear() === Number(year) && date.getUTCMonth() === Number(month) - 1 && date.getUTCDate() === Number(day);
}

/** An ISO 8601 date (UTC midnight) or date-time with a zone, as epoch ms. */
export function parseTime(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const match = ISO_TIME.exec(value);
  const ms = Date.parse(value);
  if (match === null || !Number.isFinite(ms)) throw new InputError(`--${flag} must be an ISO 8601 time (2025-01-31 or 2025-01-31T12:00:00Z), got '${value}'`, 'BAD_FLAGS');
  if (!isCalendarDate(match[1]!, match[2]!, match[3]!)) throw new InputError(`--${flag} '${value}': no such date (${match[1]}-${match[2]} has no day ${match[3]})`, 'BAD_FLAGS');
  if (value.includes('T') && match[4] === undefined) throw new InputError(`--${flag} '${value}' needs a zone (Z or +hh:mm): a local time is ambiguous`, 'BAD_FLAGS');
  return ms;
}

/** `--offsets`: `partition:offset` entries, or bare offsets (partition 0) when the topic has one partition. */
export function parseOffsets(value: string | undefined, partitions: number): Set<string> | undefined {
  if (value === undefined) return undefined;
  const positions = new Set<string>();
  for (const item of value.split(',').map((s) => s.trim())) {
    const match = /^(?:(\d+):)?(\d+)$/.exec(item);
    if (match === null) throw new InputError(`--offsets '${item}' is not partition:offset (e.g. 0:12) or an offset`, 'BAD_FLAGS');
    if (match[1] === undefined && partitions !== 1) throw new InputError(`--offsets '${item}' names no partition and the dead-letter topic has ${partitions}: write partition:offset (e.g. 0:${item})`, 'BAD_FLAGS');
    const partition = Number(match[1] ?? 0);
    if (partition >= partitions) throw new InputError(`--offsets '${item}': the dead-letter topic has no partition ${partition} (it has ${partitions})`, 'BAD_FLAGS');
    positions.add(`${partition}:${BigInt(match[2]!)}`);
  }
  return positions;
}

export interface CommonValues {
  config?: string;
  brokers?: string;
  'schema-registry'?: string;
  'client-id'?: string;
  topic?: string;
  code?: string[];
  since?: string;
  until?: string;
  offsets?: string;
  limit?: string;
  ledger?: string;
}

/** The filter flags that need no broker, checked before connecting. */
export function parseFilterFlags(values: CommonValues): { filter: Omit<DeadLetterFilter, 'positions'>; limit: number } {
  const codes = parseCodes(values.code);
  const since = parseTime(values.since, 'since');
  const until = parseTime(values.until, 'until');
  if (since !== undefined && until !== undefined && since >= until) throw new InputError(`--since (${values.since}) must be before --until (${values.until})`, 'BAD_FLAGS');
  const limit = parseNumberFlag(values.limit, 'limit', Infinity, { min: 1, integer: true });
  return { filter: { codes, since, until }, limit };
}

export interface DlqContext {
  config: StageConfig;
  kafka: KafkaClient;
  codec: RecordCodec;
  topic: string;
  /** The replay ledger topic. */
  ledger: string;
  /** Topics named by a flag, and the flag: missing, they are a typo to check, not topics to create. */
  flagged: Map<string, string>;
}

/** The registry as the stage reads it (schemaRegistry.* with its auth and TLS, CUILINK_SCHEMA_REGISTRY_*), `--schema-registry` replacing only its URL. */
export function dlqSchemaRegistry(config: StageConfig, override: string | undefined): SchemaRegistryOptions | undefined {
  if (override !== undefined && !/^https?:\/\/\S+$/.test(override)) throw new InputError(`--schema-registry must be an http(s) URL, got '${override}'`, 'BAD_FLAGS');
  const configured = schemaRegistryOf(config);
  return override === undefined ? configured : { ...configured, url: override };
}

export const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;

/** The replay ledger of dead-letter topic `topic`: `--ledger` when given, else the derived name; an InputError names the flag. */
export function ledgerTopicOf(topic: string, flag: string | undefined): string {
  const ledger = flag ?? defaultLedgerTopic(topic);
  if (!TOPIC_NAME.test(ledger)) throw new InputError(`--ledger '${ledger}' is not a topic name (1-249 of [A-Za-z0-9._-])${flag === undefined ? `: the dead-letter topic's name is too long to derive it, give --ledger` : ''}`, 'BAD_FLAGS');
  if (ledger === topic) throw new InputError(`--ledger ${ledger} is the dead-letter topic itself`, 'BAD_FLAGS');
  return ledger;
}

export function openContext(values: CommonValues): DlqContext {
  const config = loadStageConfig({ file: values.config });
  const brokers = values.brokers !== undefined ? parseBrokerList(values.brokers) : config.brokers;
  if (brokers.length === 0) throw new InputError('no Kafka brokers: pass --brokers host:port, a --config FILE with brokers, or set CUILINK_BROKERS', 'BAD_FLAGS');
  const schemaRegistry = dlqSchemaRegistry(config, values['schema-registry']);
  const topic = values.topic ?? config.topics.deadLetter;
  if (!TOPIC_NAME.test(topic)) throw new InputError(`--topic '${topic}' is not a topic name (1-249 of [A-Za-z0-9._-])`, 'BAD_FLAGS');
  const ledger = ledgerTopicOf(topic, values.ledger);
  const connection = validateKafkaConnection({ ...connectionOf(config, brokers), clientId: values['client-id'] ?? 'cuilink-dlq' });
  const flagged = new Map(values.topic === undefined ? [] : [[topic, '--topic']]);
  return { config, kafka: createKafkaClient(connection), codec: createRecordCodec({ schemaRegistry }), topic, ledger, flagged };
}

export async function partitionCount(kafka: KafkaClient, topic: string): Promise<number> {
  const admin = kafka.admin();
  try {
    return (await admin.topicOffsets(topic)).length;
  } finally {
    await admin.close();
  }
}

/** Reads the dead-letter topic to its current end (records written meanwhile are not read); a record that is no DeadLetter is kept as unreadable. */
export async function readDeadLetters(context: DlqContext): Promise<DeadLetterEntry[]> {
  const entries: DeadLetterEntry[] = [];
  await readTopicToEnd(
    context.kafka,
    context.topic,
    'cuilink-dlq',
    async (record) => {
      const entry: DeadLetterEntry = { topic: record.topic, partition: record.partition, offset: record.offset };
      try {
        entry.letter = await context.codec.decode('DeadLetter', record.value, record.headers);
      } catch (error) {
        if (!(error instanceof CuilinkError) || error.retriable) throw error;
        entry.unreadable = `${error.code}: ${error.message}`;
      }
      entries.push(entry);
    },
    300_000,
  );
  return entries;
}

/**
 * The replay ledger to its current end (read_committed: a replay's entries only once its
 * transaction committed); empty when the topic does not exist yet, which only a first --execute
 * makes.
 */
export async function readLedger(context: Pick<DlqContext, 'kafka' | 'ledger'>): Promise<ReplayLedger> {
  const ledger = new ReplayLedger(context.ledger);
  const admin = context.kafka.admin();
  let exists: boolean;
  try {
    exists = (await admin.listTopics()).includes(context.ledger);
  } finally {
    await admin.close();
  }
  if (exists) await readTopicToEnd(context.kafka, context.ledger, 'cuilink-dlq-ledger', async (record) => ledger.add(record), 300_000);
  return ledger;
}

export async function closeContext(context: DlqContext): Promise<void> {
  await context.codec.close?.();
}

/** Whether inspect shows the originals' first bytes: they may be note text, so only under the operator's PHI switch. */
export function showsFirstBytes(showText: boolean, config: StageConfig): boolean {
  return showText || config.telemetry.logPhi;
}

/** With --show-text: the original as decoded NoteEvent JSON, or its bytes as text when it is none. */
export async function originalText(codec: RecordCodec, entry: DeadLetterEntry): Promise<string> {
  const letter = entry.letter;
  if (letter === undefined || letter.original === null) return '(no original)';
  const original = Buffer.from(letter.original);
  try {
    const note = await codec.decode('NoteEvent', original, avroToHeaders(letter.originalHeaders));
    return JSON.stringify({ noteId: note.noteId, text: note.text, mentions: note.mentions.map((m) => ({ id: m.id, start: m.start, end: m.end, text: m.text, label: m.label })) });
  } catch {
    const shown = original.subarray(0, 4096);
    return `${JSON.stringify(shown.toString('utf8'))}${original.length > shown.length ? ` (… ${original.length - shown.length} more bytes)` : ''}${letter.originalTruncated ? ' (cut)' : ''}`;
  }
}

export const dlqInspect: Command = {
  name: 'dlq inspect',
  summary: 'List the dead letters (code, source, size, sha256; no note text) with a summary by code',
  usage: inspectUsage,
  async run(argv) {
    const { values } = parseFlags(argv, { ...COMMON_FLAGS, json: { type: 'boolean', default: false }, 'show-text': { type: 'boolean', default: false } });
    const { filter, limit } = parseFilterFlags(values);
    const context = openContext(values);
    try {
      await requireTopics(context.kafka, [context.topic], context.flagged);
      const positions = parseOffsets(values.offsets, await partitionCount(context.kafka, context.topic));
      const ledger = await readLedger(context);
      const entries = await readDeadLetters(context);
      const matched = selectDeadLetters(entries, { ...filter, positions });
      const shown = matched.slice(0, limit);
      const bytesShown = showsFirstBytes(values['show-text'], context.config);
      if (values['show-text']) console.error('dlq inspect: --show-text: note text (PHI) follows');
      const byCode = new Map<string, number>();
      const byReplay = new Map<string, number>();
      for (const entry of matched) {
        const code = entry.letter?.errorCode ?? '(not a DeadLetter)';
        byCode.set(code, (byCode.get(code) ?? 0) + 1);
        const verdict = replayVerdict(entry, ledger);
        const replay = verdict.replayable ? 'yes' : verdict.skip;
        byReplay.set(replay, (byReplay.get(replay) ?? 0) + 1);
      }
      for (const entry of shown) {
        const view = viewOf(entry, { firstBytes: bytesShown, ledger });
        const text = values['show-text'] ? await originalText(context.codec, entry) : undefined;
        if (values.json) console.log(JSON.stringify(text === undefined ? view : { ...view, originalText: text }));
        else {
          console.log(viewLine(view, bytesShown));
          if (text !== undefined) console.log(`  original: ${text}`);
        }
      }
      const summary = { topic: context.topic, read: entries.length, matched: matched.length, shown: shown.length, byCode: Object.fromEntries(byCode), replay: Object.fromEntries(byReplay) };
      if (values.json) console.log(JSON.stringify({ summary }));
      else {
        console.log(
          `dlq inspect: ${context.topic}: ${entries.length} records read, ${matched.length} matched${shown.length < matched.length ? ` (${shown.length} shown, --limit)` : ''}` +
            `${matched.length > 0 ? `; by code: ${countsText(byCode)}; replay: ${countsText(byReplay)}` : ''}`,
        );
      }
      return 0;
    } finally {
      await closeContext(context);
    }
  },
};
