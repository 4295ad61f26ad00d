import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { createKafkaClient } from '../../stream/kafka-client.ts';
import type { KafkaClient, PartitionOffsets } from '../../stream/kafka/client-types.ts';
import { connectionOf } from '../../stream/stage-config.ts';
import { planTopics, TOPIC_DEFAULTS } from '../../stream/topic-plan.ts';
import { requireTopics } from '../../stream/topics.ts';
import { createRecordCodec } from '../../stream/avro/create-record-codec.ts';
import type { RecordKind } from '../../stream/avro/avro-schemas.ts';
import type { ReplayLedger } from '../../stream/replay-ledger.ts';
import { readTopic } from '../../eval/topic-to-end.ts';
import { brokerStep, requireBrokers, topicPlanOptionsFromFlags, topicsConfigFromFlags } from './topics.ts';
import { dlqSchemaRegistry, ledgerTopicOf, readLedger, showsFirstBytes, TOPIC_NAME } from './dlq.ts';
import { parseRecordType, RECORD_TYPES, recordLine, recordTypeOf } from '../topic-record-lines.ts';

const usage = `Usage: cuilink topics read [--config FILE] [--topic T] [--type T] [--partition P] [--offset O|beginning|end]
                           [--max N] [--follow] [--show-text] [--read-uncommitted] [--ledger T]

Reads a topic (default: the stage's output topic) from its beginning to the end it has now and
prints one JSON object per record per line on stdout: {topic, partition, offset, key, timestamp,
type, value}, value being the record decoded with cuilink's own reader (single-object Avro, every
older schema in schemas/history/, the deprecated fingerprint header, and the Confluent wire format
when a schema registry is configured). The type follows from which of the config's topics it is:
output LinkedNote, input NoteEvent, dead-letter DeadLetter (as 'dlq inspect --json' shows it),
review ReviewMention, label and measure requests LabelRequest, gold GoldMention; --type sets it. A
record that is not a readable record of that type is printed as {…, type, error: {code, message}}
and counted. Records come in offset order within a partition. A summary goes to stderr.

It reads as an outsider: a throwaway consumer group of its own, nothing committed, never the
stage's group; only committed transactions' records (the stage writes transactionally). The
LinkedNote, review, label-request and gold records carry no note or mention text (spans, ids,
concepts); a NoteEvent's text and mention text are printed as "[redacted]" (with "textHidden":
true), and a dead letter's original as 'dlq inspect' shows it, unless --show-text: note text is PHI.

Options:
  --config FILE             stage configuration (JSON), as given to 'cuilink run' (CUILINK_* variables apply too)
  --brokers H:P,H:P         Kafka bootstrap brokers (overrides CUILINK_BROKERS and the config's "brokers")
  --schema-registry URL     read the Confluent wire format through this registry (default: the config's
                            schemaRegistry.*, as cuilink run reads it)
  --topic T                 the topic to read (default: the config's topics.output, cuilink.linked)
  --type T                  read its records as this type: ${RECORD_TYPES.join(', ')}
                            (default: from the topic's role in the config; needed for any other topic)
  --gold-topic T|none       the gold topic, read as GoldMention (default ${TOPIC_DEFAULTS.goldTopic})
  --partition P             only this partition
  --offset O|beginning|end  where to start: an offset (with --partition, or on a one-partition topic),
                            beginning (the default) or end (with --follow: only records written from now)
  --from-beginning          start at the beginning (the default; not with --offset)
  --max N                   stop after N records (error lines count)
  --follow                  go on reading past the end, printing records as they come, until
                            SIGINT/SIGTERM (Ctrl-C) or --max
  --show-text               print note and mention text, and a dead letter's original (PHI)
  --read-uncommitted        also records of open and aborted transactions (default: read_committed)
  --ledger T                a dead-letter topic only: the replay ledger its 'replay' field is judged by,
                            as 'dlq inspect --ledger T' (default: the topic's name + '.replayed')
  -h, --help                this text

Exit codes: 0 every record read was printed decoded; 1 a record could not be decoded (its error
line is on stdout); 2 a bad flag or config, --partition or --offset not on the topic; 3 the
brokers (or schema registry) could not be reached, or the topic does not exist.`;

const FLAGS = {
  config: { type: 'string' },
  brokers: { type: 'string' },
  'schema-registry': { type: 'string' },
  topic: { type: 'string' },
  type: { type: 'string' },
  'gold-topic': { type: 'string' },
  partition: { type: 'string' },
  offset: { type: 'string' },
  'from-beginning': { type: 'boolean', default: false },
  max: { type: 'string' },
  follow: { type: 'boolean', default: false },
  'show-text': { type: 'boolean', default: false },
  'read-uncommitted': { type: 'boolean', default: false },
  ledger: { type: 'string' },
} as const;

export type StartAt = { at: 'beginning' } | { at: 'end' } | { at: 'offset'; offset: bigint };

export interface ReadFlags {
  topic: string | undefined;
  type: RecordKind | undefined;
  partition: number | undefined;
  start: StartAt;
  max: number;
  follow: boolean;
  showText: boolean;
  readCommitted: boolean;
}

type ReadValues = { [K in keyof typeof FLAGS]?: (typeof FLAGS)[K]['type'] extends 'boolean' ? boolean : string };

/** The flags that need no broker, checked before connecting; a bad one is an InputError naming it. */
export function parseReadFlags(values: ReadValues): ReadFlags {
  if (values.topic !== undefined && !TOPIC_NAME.test(values.topic)) throw new InputError(`--topic '${values.topic}' is not a topic name (1-249 of [A-Za-z0-9._-])`, 'BAD_FLAGS');
  if (values['from-beginning'] === true && values.offset !== undefined) throw new InputError('--from-beginning and --offset both say where to start: give one', 'BAD_FLAGS');
  return {
    topic: values.topic,
    type: parseRecordType(values.type),
    partition: values.partition === undefined ? undefined : parseNumberFlag(values.partition, 'partition', 0, { min: 0, max: TOPIC_PARTITIONS_MAX - 1, integer: true }),
    start: parseStart(values.offset),
    max: parseNumberFlag(values.max, 'max', Infinity, { min: 1, integer: true }),
    follow: values.follow === true,
    showText: values['show-text'] === true,
    readCommitted: values['read-uncommitted'] !== true,
  };
}

const TOPIC_PARTITIONS_MAX = 1_000_000;

function parseStart(value: string | undefined): StartAt {
  if (value === undefined || value === 'beginning') return { at: 'beginning' };
  if (value === 'end') return { at: 'end' };
  if (!/^\d{1,19}$/.test(value)) throw new InputError(`--offset must be an offset (0 or more), beginning or end, got '${value}'`, 'BAD_FLAGS');
  return { at: 'offset', offset: BigInt(value) };
}

export interface ReadPlan {
  partitions: number[];
  startOffsets: Map<number, bigint>;
  /** Lines for stderr: an offset retention already removed. */
  notes: string[];
}

/** Which partitions to read and where each starts, checked against the topic's offsets (an InputError names the flag). */
export function readPlan(topic: string, offsets: readonly PartitionOffsets[], flags: Pick<ReadFlags, 'partition' | 'start' | 'follow'>): ReadPlan {
  const known = offsets.map((p) => p.partition).sort((a, b) => a - b);
  if (flags.partition !== undefined && !known.includes(flags.partition)) throw new InputError(`--partition ${flags.partition}: ${topic} has no such partition (it has ${known.length}: ${known[0]}-${known.at(-1)})`, 'BAD_FLAGS');
  const chosen = offsets.filter((p) => flags.partition === undefined || p.partition === flags.partition);
  const notes: string[] = [];
  const start = flags.start;
  if (start.at === 'offset' && chosen.length !== 1) throw new InputError(`--offset ${start.offset} names no partition and ${topic} has ${chosen.length}: add --partition P`, 'BAD_FLAGS');
  const startOffsets = new Map<number, bigint>();
  for (const p of chosen) {
    const [low, high] = [BigInt(p.low), BigInt(p.high)];
    if (start.at === 'beginning') startOffsets.set(p.partition, low);
    else if (start.at === 'end') startOffsets.set(p.partition, high);
    else if (start.offset > high) throw new InputError(`--offset ${start.offset}: partition ${p.partition} of ${topic} ends at ${high} (the next offset written)`, 'BAD_FLAGS');
    else {
      if (start.offset < low) notes.push(`partition ${p.partition} of ${topic} starts at ${low} (retention removed what came before): reading from there`);
      startOffsets.set(p.partition, start.offset < low ? low : start.offset);
    }
  }
  return { partitions: chosen.map((p) => p.partition), startOffsets, notes };
}

/** Where lines go: a stream written with back-pressure (a slow `| jq` or `| less` slows the read, nothing piles up); a closed pipe (`| head`) stops the read. */
export class LineWriter {
  /** The stream failed (a closed pipe): nothing more is written. */
  closed = false;
  private readonly waiting: (() => void)[] = [];
  private readonly release = () => {
    for (const resume of this.waiting.splice(0)) resume();
  };
  private readonly failed = () => {
    this.closed = true;
    this.release();
    this.onClosed();
  };

  constructor(
    private readonly stream: NodeJS.WritableStream,
    private readonly onClosed: () => void,
  ) {
    stream.on('drain', this.release);
    stream.on('error', this.failed);
  }

  async write(line: string): Promise<void> {
    if (this.closed || this.stream.write(`${line}\n`)) return;
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /**
   * Stops waiting on the stream. The error listener stays: a write's EPIPE may arrive after the
   * read ended, and process.stdout without one would crash the process with it.
   */
  close(): void {
    this.stream.off('drain', this.release);
    this.release();
  }
}

export interface ReadIo {
  out: NodeJS.WritableStream;
  err: (line: string) => void;
  /** Aborted: stop reading (SIGINT/SIGTERM under the CLI). */
  stop?: AbortSignal;
}

/** `cuilink topics read` with its output streams and stop signal given (the integration test runs it in process). */
export async function runTopicsRead(argv: string[], io: ReadIo): Promise<number> {
  const { values } = parseFlags(argv, FLAGS);
  const flags = parseReadFlags(values);
  const config = topicsConfigFromFlags(values);
  const plan = planTopics(config, topicPlanOptionsFromFlags({ 'gold-topic': values['gold-topic'] }));
  const topic = flags.topic ?? config.topics.output;
  const type = recordTypeOf(topic, plan, flags.type);
  if (values.ledger !== undefined && type !== 'DeadLetter') throw new InputError(`--ledger: only for a dead-letter topic; ${topic} is read as ${type}`, 'BAD_FLAGS');
  const ledgerTopic = type === 'DeadLetter' ? ledgerTopicOf(topic, values.ledger) : undefined;
  const schemaRegistry = dlqSchemaRegistry(config, values['schema-registry']);
  requireBrokers(config);
  const kafka = createKafkaClient({ ...connectionOf(config), clientId: 'cuilink-topics-read' }, () => {});
  const codec = createRecordCodec({ schemaRegistry });
  try {
    return await brokerStep('topics read', async () => {
      await requireTopics(kafka, [topic]);
      const where = readPlan(topic, await topicOffsets(kafka, topic), flags);
      for (const note of where.notes) io.err(`topics read: ${note}`);
      const ledger = ledgerTopic === undefined ? undefined : await readLedger({ kafka, ledger: ledgerTopic });
      if (flags.showText) io.err('topics read: --show-text: note text (PHI) follows');
      return await printRecords(kafka, topic, type, where, flags, io, { codec, ledger, firstBytes: showsFirstBytes(flags.showText, config) });
    });
  } finally {
    await codec.close?.();
  }
}

async function topicOffsets(kafka: KafkaClient, topic: string): Promise<PartitionOffsets[]> {
  const admin = kafka.admin();
  try {
    return await admin.topicOffsets(topic);
  } finally {
    await admin.close();
  }
}

/** A read to the end fails when nothing came for this long: a broker that went away, not a large topic. */
const STALL_MS = 120_000;

async function printRecords(
  kafka: KafkaClient,
  topic: string,
  type: RecordKind,
  where: ReadPlan,
  flags: ReadFlags,
  io: ReadIo,
  decode: { codec: ReturnType<typeof createRecordCodec>; ledger: ReplayLedger | undefined; firstBytes: boolean },
): Promise<number> {
  const enough = new AbortController();
  const stopped = () => enough.abort();
  io.stop?.addEventListener('abort', stopped, { once: true });
  if (io.stop?.aborted) enough.abort();
  const output = new LineWriter(io.out, stopped);
  let printed = 0;
  let undecodable = 0;
  try {
    await readTopic(
      kafka,
      topic,
      'cuilink-topics-read',
      async (record) => {
        if (printed >= flags.max) return;
        const { line, decoded } = await recordLine(record, type, decode.codec, { showText: flags.showText, firstBytes: decode.firstBytes, ledger: decode.ledger });
        printed++;
        if (!decoded) undecodable++;
        await output.write(JSON.stringify(line));
        if (printed >= flags.max) enough.abort();
      },
      {
        partitions: where.partitions,
        startOffsets: where.startOffsets,
        follow: flags.follow,
        signal: enough.signal,
        readCommitted: flags.readCommitted,
        timeoutMs: Infinity,
        stallMs: STALL_MS,
        onRestart: (error) => io.err(`topics read: the consumer failed and reads on: ${(error as Error).message}`),
      },
    );
  } finally {
    io.stop?.removeEventListener('abort', stopped);
    output.close();
  }
  const why = output.closed ? ' (the output was closed)' : printed >= flags.max ? ` (--max ${flags.max})` : io.stop?.aborted ? ' (stopped)' : '';
  io.err(`topics read: ${topic} (${type}): ${printed} record${printed === 1 ? '' : 's'}${why}${undecodable > 0 ? `, ${undecodable} could not be decoded` : ''}`);
  return undecodable > 0 ? 1 : 0;
}

export const topicsRead: Command = {
  name: 'topics read',
  summary: "Print a topic's records as JSON lines (default the stage's output), decoded as its type; no consumer of your own needed",
  usage,
  async run(argv) {
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      return await runTopicsRead(argv, { out: process.stdout, err: (line) => console.error(line), stop: stop.signal });
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  },
};
