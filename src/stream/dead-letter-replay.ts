import { createHash } from 'node:crypto';
import { isoTimeOf } from '../kb/epoch-time.ts';
import type { DeadLetterRecord } from './avro/avro-records.ts';
import { knownSchemas, type KnownSchemas, type WriterSchema } from './avro/avro-schemas.ts';
import { hasConfluentWireHeader } from './avro/confluent-avro-codec.ts';
import { SCHEMA_FINGERPRINT_HEADER } from './avro/record-codec.ts';
import { hasSingleObjectMarker, SINGLE_OBJECT_HEADER_BYTES, SINGLE_OBJECT_MARKER } from './avro/single-object.ts';
import { RECORD_FAULT_CODES } from './dead-letter-policy.ts';
import type { OutboundRecord } from './kafka/client-types.ts';
import { alreadyReplayedDetail, ledgerKey, type ReplayLedger } from './replay-ledger.ts';

/**
 * What `cuilink dlq inspect` shows of a dead letter and what `cuilink dlq replay` may send back to
 * the input topic (docs/dead-letters.md). Pure: the commands (src/cli/commands/dlq.ts) read the
 * topic and print.
 */

/** Header on a replayed record: the dead letter it came from, `<dead-letter topic>/<partition>/<offset>`. */
export const REPLAYED_FROM_HEADER = 'cuilink-replayed-from';
/**
 * Bytes of the original value `inspect` shows as hex, only with the operator's PHI switch
 * (`--show-text`, `telemetry.logPhi`): a record without framing starts with its note text.
 */
export const FIRST_BYTES = 16;

/**
 * Codes whose record, re-sent unchanged, fails the same way whatever config or code is fixed: the
 * fault is in the bytes themselves. `replay` never sends them (the producer must send a corrected
 * record instead). docs/dead-letters.md has the same table; a unit test keeps RECORD_FAULT_CODES
 * split exactly between this map and REPLAYABLE_AFTER_FIX.
 */
export const NEVER_REPLAY: ReadonlyMap<string, string> = new Map([
  ['EMPTY_RECORD', 'no value (a tombstone or empty bytes): re-sent, it is empty again'],
  ['UNDECODABLE', 'the bytes are no readable Avro record under the schema they name (truncated, a bad varint or union branch, trailing bytes): re-sent unchanged, they fail the same way'],
  ['BAD_TEXT_ENCODING', 'a string in the bytes is not UTF-8: no fix of the stage makes its offsets mean what the producer meant'],
  ['BAD_NOTE', "no note id, or text or mentions of the wrong type: the record's own content"],
  ['EMPTY_NOTE', 'the note text is empty: nothing to link, ever'],
  ['BAD_MENTION', "a mention without an id, a duplicate id, a label or score of the wrong type: the record's own content"],
]);

/** Codes that may succeed on replay once something outside the record was fixed, and what that fix is. */
export const REPLAYABLE_AFTER_FIX: ReadonlyMap<string, string> = new Map([
  ['UNKNOWN_SCHEMA', "the stage learns the writer schema (its file added to schemas/history/ in a new release, or registered in the schema registry); never a record that names no schema at all (namesNoSchema), another record type's (namesSchemaOfAnotherKind) or two different ones (namesTwoSchemas): it fails again"],
  ['INCOMPATIBLE_SCHEMA', 'a reader schema that can read the writer schema (a new release)'],
  ['RECORD_TOO_LARGE', "the decoder's bounds raised"],
  ['NOTE_TOO_LARGE', 'limits.maxNoteChars or limits.maxMentionsPerNote raised'],
  ['BAD_SPAN', 'limits.maxMentionChars raised (a span too long); a span outside its text fails again'],
  ['SPAN_TEXT_MISMATCH', "a fix of the stage's offset handling; a producer that sent wrong offsets fails again"],
  ['OUTPUT_TOO_LARGE', "the output topic's max.message.bytes (and topics.maxMessageBytes) raised, or link.topK lowered"],
]);

const NAMES_NO_SCHEMA = `neither the single-object header (C3 01 and a fingerprint), nor a ${SCHEMA_FINGERPRINT_HEADER} header, nor the Confluent magic byte and schema id: no schema the stage learns makes it readable`;

/**
 * An UNKNOWN_SCHEMA original that names no writer schema in any way a reader looks for one. A
 * schema the stage learns later, or a switch of the wire format, reads only records that name
 * theirs; this one, re-sent unchanged, fails again.
 */
export function namesNoSchema(letter: Pick<DeadLetterRecord, 'original' | 'originalHeaders'>): boolean {
  if (letter.original === null) return true;
  const bytes = Buffer.from(letter.original);
  if (hasSingleObjectMarker(bytes) || hasConfluentWireHeader(bytes)) return false;
  return !letter.originalHeaders.some((h) => h.key === SCHEMA_FINGERPRINT_HEADER && h.value !== null);
}

/**
 * The schema an UNKNOWN_SCHEMA original names, by its single-object fingerprint or the deprecated
 * fingerprint header, when this build knows it as another record type's than the NoteEvent the
 * input topic is read as (a LinkedNote written to the notes topic). A fingerprint hashes the
 * schema's full name, so no release ever reads it as a NoteEvent: re-sent, it fails again. A
 * Confluent schema id is not judged: what it names is only in the registry.
 */
export function namesSchemaOfAnotherKind(letter: Pick<DeadLetterRecord, 'original' | 'originalHeaders'>, schemas: KnownSchemas = knownSchemas()): WriterSchema | undefined {
  if (letter.original === null) return undefined;
  const bytes = Buffer.from(letter.original);
  let named: WriterSchema | undefined;
  if (hasSingleObjectMarker(bytes)) {
    if (bytes.length < SINGLE_OBJECT_HEADER_BYTES) return undefined;
    named = schemas.bySingleObjectHeader(bytes.subarray(SINGLE_OBJECT_MARKER.length, SINGLE_OBJECT_HEADER_BYTES));
  } else {
    // The first one, as the codec reads a repeated header.
    const header = letter.originalHeaders.find((h) => h.key === SCHEMA_FINGERPRINT_HEADER && h.value !== null);
    if (header !== undefined) named = schemas.byWriterFingerprint(Buffer.from(header.value!).toString('utf8').toLowerCase());
  }
  return named !== undefined && named.kind !== 'NoteEvent' ? named : undefined;
}

/**
 * An UNKNOWN_SCHEMA original that names its schema twice, differently: a single-object fingerprint
 * this build knows and a fingerprint header that names another schema. The codec refuses such a
 * record rather than guess, and both names are fixed by the record's bytes: re-sent, it fails
 * again. Returns the two names, or undefined.
 */
export function namesTwoSchemas(letter: Pick<DeadLetterRecord, 'original' | 'originalHeaders'>, schemas: KnownSchemas = knownSchemas()): { writer: WriterSchema; header: string } | undefined {
  if (letter.original === null) return undefined;
  const bytes = Buffer.from(letter.original);
  if (!hasSingleObjectMarker(bytes) || bytes.length < SINGLE_OBJECT_HEADER_BYTES) return undefined;
  const writer = schemas.bySingleObjectHeader(bytes.subarray(SINGLE_OBJECT_MARKER.length, SINGLE_OBJECT_HEADER_BYTES));
  const header = letter.originalHeaders.find((h) => h.key === SCHEMA_FINGERPRINT_HEADER && h.value !== null);
  if (writer === undefined || header === undefined) return undefined;
  const named = Buffer.from(header.value!).toString('utf8').toLowerCase();
  return named === writer.fingerprint ? undefined : { writer, header: named };
}

/** Why `replay` leaves a dead letter alone. */
export type SkipReason = 'cut' | 'never' | 'unknown-code' | 'sha256-mismatch' | 'repeated-header' | 'not-a-dead-letter' | 'already-replayed';

export type ReplayVerdict = { replayable: true } | { replayable: false; skip: SkipReason; detail: string };

/** One record of the dead-letter topic: its position, and the DeadLetter in it or why it is none. */
export interface DeadLetterEntry {
  topic: string;
  partition: number;
  offset: string;
  letter?: DeadLetterRecord;
  /** Set instead of `letter` when the record is no readable DeadLetter: code and message. */
  unreadable?: string;
}

/** The position as `inspect` prints it and `--offsets` takes it: `partition:offset`. */
export function positionOf(entry: { partition: number; offset: string }): string {
  return `${entry.partition}:${entry.offset}`;
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Whether `replay` may send this dead letter's original back, or why not. With `ledger`, one it
 * already sent is skipped (`--again` passes none); a hopeless one keeps its own reason.
 */
export function replayVerdict(entry: DeadLetterEntry, ledger?: ReplayLedger): ReplayVerdict {
  const letter = entry.letter;
  if (letter === undefined) return { replayable: false, skip: 'not-a-dead-letter', detail: `not a readable DeadLetter record (${entry.unreadable ?? 'unknown'})` };
  if (letter.originalTruncated) {
    return { replayable: false, skip: 'cut', detail: `the original was cut to fit the dead-letter topic (${letter.original?.length ?? 0} of ${letter.originalSize ?? '?'} bytes kept): replay the whole record from ${letter.sourceTopic}/${letter.partition}/${letter.offset} if it is still there` };
  }
  const never = NEVER_REPLAY.get(letter.errorCode);
  if (never !== undefined) return { replayable: false, skip: 'never', detail: `${letter.errorCode} never succeeds on replay: ${never}` };
  if (letter.errorCode === 'UNKNOWN_SCHEMA' && namesNoSchema(letter)) return { replayable: false, skip: 'never', detail: `UNKNOWN_SCHEMA never succeeds on replay for a record that names no schema: ${NAMES_NO_SCHEMA}` };
  const other = letter.errorCode === 'UNKNOWN_SCHEMA' ? namesSchemaOfAnotherKind(letter) : undefined;
  if (other !== undefined) {
    return { replayable: false, skip: 'never', detail: `UNKNOWN_SCHEMA never succeeds on replay for a record of another type: it names ${other.name} (${other.file}), and the input topic is read as NoteEvent; is this the right topic?` };
  }
  const twice = letter.errorCode === 'UNKNOWN_SCHEMA' ? namesTwoSchemas(letter) : undefined;
  if (twice !== undefined) {
    return { replayable: false, skip: 'never', detail: `UNKNOWN_SCHEMA never succeeds on replay for a record that names two schemas: its single-object fingerprint ${twice.writer.name} (${twice.writer.file}) and a ${SCHEMA_FINGERPRINT_HEADER} header ${twice.header.slice(0, 16)}…; the stage refuses to guess between them` };
  }
  if (!RECORD_FAULT_CODES.has(letter.errorCode) || !REPLAYABLE_AFTER_FIX.has(letter.errorCode)) {
    return { replayable: false, skip: 'unknown-code', detail: `${letter.errorCode} is no code this version knows; not replayed` };
  }
  if (letter.original !== null && letter.originalSha256 !== null && sha256(Buffer.from(letter.original)) !== letter.originalSha256) {
    return { replayable: false, skip: 'sha256-mismatch', detail: 'the original does not match its recorded sha256: the dead letter is damaged' };
  }
  const keys = letter.originalHeaders.map((h) => h.key).filter((k) => k !== REPLAYED_FROM_HEADER);
  const repeated = keys.find((k, i) => keys.indexOf(k) !== i);
  if (repeated !== undefined) return { replayable: false, skip: 'repeated-header', detail: `the header ${JSON.stringify(repeated)} repeats, which the Kafka client cannot produce` };
  const replayed = ledger?.replayOf(entry, letter);
  if (replayed !== undefined) return { replayable: false, skip: 'already-replayed', detail: alreadyReplayedDetail(replayed, ledger!.topic) };
  return { replayable: true };
}

export interface DeadLetterFilter {
  /** Only these error codes. */
  codes?: ReadonlySet<string>;
  /** failedAt ≥ since (epoch ms). */
  since?: number;
  /** failedAt < until (epoch ms). */
  until?: number;
  /** Only these positions (`partition:offset`). */
  positions?: ReadonlySet<string>;
}

/** Whether an entry passes every given filter; an unreadable record passes only filters it can be judged by (positions). */
export function matchesFilter(entry: DeadLetterEntry, filter: DeadLetterFilter): boolean {
  if (filter.positions !== undefined && !filter.positions.has(positionOf(entry))) return false;
  const letter = entry.letter;
  if (letter === undefined) return filter.codes === undefined && filter.since === undefined && filter.until === undefined;
  if (filter.codes !== undefined && !filter.codes.has(letter.errorCode)) return false;
  if (filter.since !== undefined && letter.failedAt < filter.since) return false;
  if (filter.until !== undefined && letter.failedAt >= filter.until) return false;
  return true;
}

/** The entries that pass `filter`, in partition then offset order, at most `limit` of them. */
export function selectDeadLetters(entries: readonly DeadLetterEntry[], filter: DeadLetterFilter, limit = Infinity): DeadLetterEntry[] {
  return [...entries]
    .sort((a, b) => a.partition - b.partition || compareOffsets(a.offset, b.offset))
    .filter((e) => matchesFilter(e, filter))
    .slice(0, limit);
}

function compareOffsets(a: string, b: string): number {
  const [x, y] = [BigInt(a), BigInt(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}

/** What `inspect` prints of one dead letter: no note text, only sizes, hashes and a short hex prefix. */
export interface DeadLetterView {
  topic: string;
  partition: number;
  offset: string;
  errorCode: string | null;
  reason: string | null;
  stage: string | null;
  /** ISO 8601; null for an unreadable record, or a failedAt no date holds (a damaged or hand-written letter). */
  failedAt: string | null;
  source: { topic: string; partition: number; offset: number } | null;
  /** The original key as printable text, or `hex:` and its first bytes. */
  key: string | null;
  size: number | null;
  sha256: string | null;
  /** The original's first FIRST_BYTES bytes in hex; null without an original or when they are not to be shown (PHI). */
  firstBytes: string | null;
  cut: boolean;
  /** The dead letter this record was replayed from, when it failed again after a replay. */
  replayedFrom: string | null;
  replay: 'yes' | SkipReason;
  unreadable?: string;
}

/** `firstBytes`: show the original's first bytes (they may be note text: only under the operator's PHI switch); `ledger`: what replay already sent. */
export function viewOf(entry: DeadLetterEntry, options: { firstBytes?: boolean; ledger?: ReplayLedger } = {}): DeadLetterView {
  const verdict = replayVerdict(entry, options.ledger);
  const base = { topic: entry.topic, partition: entry.partition, offset: entry.offset, replay: verdict.replayable ? ('yes' as const) : verdict.skip };
  const letter = entry.letter;
  if (letter === undefined) {
    return { ...base, errorCode: null, reason: null, stage: null, failedAt: null, source: null, key: null, size: null, sha256: null, firstBytes: null, cut: false, replayedFrom: null, unreadable: entry.unreadable ?? 'unknown' };
  }
  const original = letter.original === null ? null : Buffer.from(letter.original);
  const replayedFrom = letter.originalHeaders.find((h) => h.key === REPLAYED_FROM_HEADER)?.value;
  return {
    ...base,
    errorCode: letter.errorCode,
    reason: letter.reason,
    stage: letter.stage,
    failedAt: isoTimeOf(letter.failedAt) ?? null,
    source: { topic: letter.sourceTopic, partition: letter.partition, offset: letter.offset },
    key: keyText(letter.originalKey),
    size: letter.originalSize ?? original?.length ?? null,
    sha256: letter.originalSha256 ?? (original === null || letter.originalTruncated ? null : sha256(original)),
    firstBytes: original === null || options.firstBytes !== true ? null : original.subarray(0, FIRST_BYTES).toString('hex'),
    cut: letter.originalTruncated,
    replayedFrom: replayedFrom === undefined || replayedFrom === null ? null : Buffer.from(replayedFrom).toString('utf8'),
  };
}

/** One `inspect` line; `first=hidden` where the original's first bytes were not to be shown. */
export function viewLine(v: DeadLetterView, bytesShown: boolean): string {
  if (v.unreadable !== undefined) return `${positionOf(v)} (not a DeadLetter) ${JSON.stringify(v.unreadable)}`;
  const fields = [
    positionOf(v),
    v.errorCode,
    `stage=${v.stage}`,
    `failedAt=${v.failedAt ?? '(none)'}`,
    `source=${v.source!.topic}/${v.source!.partition}/${v.source!.offset}`,
    `key=${v.key ?? '(null)'}`,
    `size=${v.size ?? '(null)'}`,
    `sha256=${v.sha256 ?? '-'}`,
    `first=${v.firstBytes ?? (bytesShown || v.size === null ? '-' : 'hidden')}`,
    `cut=${v.cut ? 'yes' : 'no'}`,
    `replay=${v.replay}`,
    ...(v.replayedFrom === null ? [] : [`replayedFrom=${v.replayedFrom}`]),
    `reason=${JSON.stringify(v.reason)}`,
  ];
  return fields.join(' ');
}

/** A key (a note id) as text when it is short printable ASCII, else `hex:` and its first 16 bytes. */
export function keyText(key: Buffer | null): string | null {
  if (key === null) return null;
  const bytes = Buffer.from(key);
  const text = bytes.toString('latin1');
  if (bytes.length <= 128 && /^[\x21-\x7e]*$/.test(text)) return text;
  return `hex:${bytes.subarray(0, FIRST_BYTES).toString('hex')}${bytes.length > FIRST_BYTES ? '…' : ''}`;
}

/**
 * The record `replay` sends for a replayable dead letter: the original key, value and headers
 * unchanged (a REPLAYED_FROM_HEADER of an earlier replay replaced), plus REPLAYED_FROM_HEADER
 * naming this dead letter. No partition: the key decides, as for the original producer.
 */
export function replayMessage(entry: DeadLetterEntry): OutboundRecord {
  const letter = entry.letter;
  if (letter === undefined) throw new Error(`${positionOf(entry)}: not a dead letter`);
  const headers: Record<string, Buffer> = Object.create(null); // any header name, '__proto__' too
  for (const { key, value } of letter.originalHeaders) {
    if (key !== REPLAYED_FROM_HEADER) headers[key] = value === null ? Buffer.alloc(0) : Buffer.from(value);
  }
  headers[REPLAYED_FROM_HEADER] = Buffer.from(ledgerKey(entry));
  return { key: letter.originalKey === null ? null : Buffer.from(letter.originalKey), value: letter.original === null ? null : Buffer.from(letter.original), headers };
}

/** Counts by key, as `A 2, B 1` sorted by count then name. */
export function countsText(counts: Map<string, number>): string {
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}
