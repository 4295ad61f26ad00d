import { CuilinkError, InputError } from '../kb/errors.ts';
import { isoTimeOf } from '../kb/epoch-time.ts';
import type { InboundRecord } from '../stream/kafka/client-types.ts';
import type { RecordCodec } from '../stream/avro/record-codec.ts';
import { RECORD_KINDS, type RecordKind } from '../stream/avro/avro-schemas.ts';
import type { DeadLetterRecord, NoteEventRecord } from '../stream/avro/avro-records.ts';
import type { PlannedTopic, TopicRole } from '../stream/topic-plan.ts';
import { topicLabel } from '../stream/topic-plan.ts';
import { viewOf } from '../stream/dead-letter-replay.ts';
import type { ReplayLedger } from '../stream/replay-ledger.ts';
import { REDACTED } from '../telemetry/logger.ts';
import { originalText } from './commands/dlq.ts';

/**
 * What `cuilink topics read` prints of one record (docs/topics.md): its position, key and time,
 * and the record decoded as its topic's type, or why it could not be. Note and mention text (PHI)
 * only when the operator asked for it.
 */

/** The record type each topic of the stage config carries; the replay ledger (JSON) is none of them. */
export const KIND_OF_ROLE: Readonly<Record<Exclude<TopicRole, 'replayLedger'>, RecordKind>> = {
  input: 'NoteEvent',
  output: 'LinkedNote',
  deadLetter: 'DeadLetter',
  review: 'ReviewMention',
  labelRequests: 'LabelRequest',
  measureRequests: 'LabelRequest',
  gold: 'GoldMention',
};

export const RECORD_TYPES = Object.keys(RECORD_KINDS) as RecordKind[];

/** `--type`: one of the record types, as the schemas name them. */
export function parseRecordType(value: string | undefined): RecordKind | undefined {
  if (value === undefined) return undefined;
  if (!(RECORD_TYPES as string[]).includes(value)) throw new InputError(`--type '${value}' is not a record type; the types are ${RECORD_TYPES.join(', ')}`, 'BAD_FLAGS');
  return value as RecordKind;
}

/** The record type of `topic`: `--type` when given, else what the config's topic of that name carries. */
export function recordTypeOf(topic: string, plan: readonly PlannedTopic[], forced: RecordKind | undefined): RecordKind {
  if (forced !== undefined) return forced;
  const planned = plan.find((p) => p.topic === topic);
  if (planned === undefined || planned.role === 'replayLedger') {
    throw new InputError(`--topic ${topic} is none of the topics of this config (${plan.map(topicLabel).join('; ')}): give --type ${RECORD_TYPES.join('|')}, or the --config (or CUILINK_* settings) that names it`, 'BAD_FLAGS');
  }
  return KIND_OF_ROLE[planned.role];
}

export interface RecordLine {
  topic: string;
  partition: number;
  offset: string;
  /** The key as UTF-8 text; null without a key, or when it is no UTF-8 (then `keyHex`). */
  key: string | null;
  keyHex?: string;
  /** The record's timestamp (ISO 8601), null when it has none (or one no date holds). */
  timestamp: string | null;
  type: RecordKind;
  value?: unknown;
  /** Set instead of `value` when the record could not be read as `type`. */
  error?: { code: string; message: string };
  /** Note and mention text were replaced by the redaction marker (no --show-text). */
  textHidden?: true;
}

export interface LineOptions {
  /** Print note and mention text (PHI): `--show-text`. */
  showText: boolean;
  /** A dead letter's original's first bytes in hex (`--show-text` or telemetry.logPhi, as `dlq inspect`). */
  firstBytes: boolean;
  /** What `dlq replay` already sent: a dead letter's `replay` verdict reads it. */
  ledger?: ReplayLedger;
}

function keyFields(key: Buffer | null): Pick<RecordLine, 'key' | 'keyHex'> {
  if (key === null) return { key: null };
  const text = key.toString('utf8');
  return Buffer.from(text, 'utf8').equals(key) ? { key: text } : { key: null, keyHex: key.toString('hex') };
}

/** A producer may set any int64 as a record's timestamp: one no Date holds is shown as none. */
function timestampOf(ms: string): string | null {
  const n = Number(ms);
  return n >= 0 ? (isoTimeOf(n) ?? null) : null;
}

function hideText(note: NoteEventRecord): NoteEventRecord {
  return { ...note, text: REDACTED, mentions: note.mentions.map((m) => ({ ...m, text: REDACTED })) };
}

/**
 * One record as its line. A record that is not a readable `type` gives a line with `error` (and
 * `decoded` false); a retriable failure (the schema registry unreachable) is thrown: it says
 * nothing about the record.
 */
export async function recordLine(record: InboundRecord, type: RecordKind, codec: RecordCodec, options: LineOptions): Promise<{ line: RecordLine; decoded: boolean }> {
  const line: RecordLine = { topic: record.topic, partition: record.partition, offset: record.offset, ...keyFields(record.key), timestamp: timestampOf(record.timestamp), type };
  let decoded;
  try {
    decoded = await codec.decode(type, record.value, record.headers);
  } catch (error) {
    if (error instanceof CuilinkError && error.retriable) throw error;
    line.error = { code: error instanceof CuilinkError ? error.code : 'UNDECODABLE', message: (error as Error).message };
    return { line, decoded: false };
  }
  if (type === 'DeadLetter') {
    const entry = { topic: record.topic, partition: record.partition, offset: record.offset, letter: decoded as DeadLetterRecord };
    const view = viewOf(entry, { firstBytes: options.firstBytes, ledger: options.ledger });
    line.value = options.showText ? { ...view, originalText: await originalText(codec, entry) } : view;
  } else if (type === 'NoteEvent' && !options.showText) {
    line.value = hideText(decoded as NoteEventRecord);
    line.textHidden = true;
  } else {
    line.value = decoded;
  }
  return { line, decoded: true };
}
