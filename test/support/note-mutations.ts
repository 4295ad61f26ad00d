import { createHash } from 'node:crypto';
import type { NoteInput } from '../../src/link/types.ts';
import { knownSchemas, toSingleObject } from '../../src/stream/avro/index.ts';

/**
 * NoteEvent records mutated the many ways a producer, a broker or a disk can get them wrong, for
 * the stream-stage fuzz test (test/unit/stream/record-fuzz.test.ts). The Avro body is written by
 * hand, not with avsc, so that a mutant can carry what avsc would refuse to write: raw string
 * bytes (a lone surrogate in WTF-8, invalid UTF-8), ints beyond 32 bits, negative block counts,
 * union branches that do not exist.
 */

/** A string field: text (written as UTF-8) or raw bytes written as they are. */
export type AvroText = string | Buffer;

export interface RawMention {
  id: AvroText;
  start: number | bigint;
  end: number | bigint;
  text: AvroText;
  label: AvroText;
  /** A branch index other than 0 or 1 is written as given (an invalid union branch). */
  score: number | null | { branch: number };
}

export interface RawNote {
  noteId: AvroText;
  text: AvroText;
  mentions: RawMention[];
  source: AvroText | null;
  timestamp: number | bigint;
  nerModelVersion: AvroText | null;
  /** How the mentions array is blocked: one block (default), one item per block, or negative counts (with byte sizes). */
  blocks?: 'one' | 'each' | 'negative';
}

/** What the stage must make of a mutant: linked, dead-lettered with this code, or either (any record-fault code). */
export type Expectation = 'linked' | 'dead' | { code: string };

export interface MutantRecord {
  /** Names the mutation and its parameters: with the seed and case number, enough to rebuild it. */
  what: string;
  value: Buffer | null;
  /** Header (name, value) pairs as a Kafka record carries them: names may repeat, values may be null. */
  headers: [string, string | Buffer | null][];
  /** The record key; a short one of the test's own when absent. */
  key?: Buffer | null;
  expect?: Expectation;
}

export type Random = () => number;

export const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
export const int = (random: Random, below: number): number => Math.floor(random() * below);

function zigzag(value: number | bigint): bigint {
  const n = BigInt(value);
  return n >= 0n ? n << 1n : (-n << 1n) - 1n;
}

export function varint(value: number | bigint): Buffer {
  let n = zigzag(value);
  const bytes: number[] = [];
  do {
    let byte = Number(n & 0x7fn);
    n >>= 7n;
    if (n > 0n) byte |= 0x80;
    bytes.push(byte);
  } while (n > 0n);
  return Buffer.from(bytes);
}

export function str(value: AvroText): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([varint(bytes.length), bytes]);
}

function optionalStr(value: AvroText | null): Buffer {
  return value === null ? varint(0) : Buffer.concat([varint(1), str(value)]);
}

function mentionBytes(m: RawMention): Buffer {
  let score: Buffer;
  if (m.score === null) score = varint(0);
  else if (typeof m.score === 'number') {
    const double = Buffer.alloc(8);
    double.writeDoubleLE(m.score);
    score = Buffer.concat([varint(1), double]);
  } else score = varint(m.score.branch);
  return Buffer.concat([str(m.id), varint(m.start), varint(m.end), str(m.text), str(m.label), score]);
}

/** The Avro binary body of a NoteEvent (v2, or v1 without nerModelVersion). */
export function noteEventBody(note: RawNote, version: 1 | 2 = 2): Buffer {
  const items = note.mentions.map(mentionBytes);
  let array: Buffer[];
  if (items.length === 0) array = [varint(0)];
  else if (note.blocks === 'each') array = [...items.flatMap((item) => [varint(1), item]), varint(0)];
  else if (note.blocks === 'negative') array = [varint(-items.length), varint(Buffer.concat(items).length), ...items, varint(0)];
  else array = [varint(items.length), ...items, varint(0)];
  const parts = [str(note.noteId), str(note.text), ...array, optionalStr(note.source), varint(note.timestamp)];
  if (version === 2) parts.push(optionalStr(note.nerModelVersion));
  return Buffer.concat(parts);
}

export function rawNote(note: NoteInput): RawNote {
  return {
    noteId: note.noteId,
    text: note.text,
    mentions: note.mentions.map((m) => ({ id: m.id, start: m.start, end: m.end, text: m.text, label: m.label, score: m.score ?? null })),
    source: note.source ?? null,
    timestamp: note.timestamp ?? 1_700_000_000_000,
    nerModelVersion: note.nerModelVersion ?? null,
  };
}

const noteEventSchemas = () => knownSchemas().all('NoteEvent');

/** Single-object encoded as the current NoteEvent (or as v1 with the v1 fingerprint). */
export function singleObject(note: RawNote, version: 1 | 2 = 2): Buffer {
  const schema = noteEventSchemas().find((s) => (version === 2 ? s.current : !s.current))!;
  return toSingleObject(schema.singleObjectFingerprint, noteEventBody(note, version));
}

/** Texts that are hard on decoders, normalizers, regexes and tokenizers (each valid UTF-16). */
export const HOSTILE_TEXTS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  '\u200f\u202e',
  'e\u0301\u0301\u0301',
  '😀',
  '👩‍⚕️🩺',
  '\ufeff',
  '\r\n\t',
  '[M]',
  '[/M]',
  '(DM)',
  'İΣ',
  '\u{20000}',
  '\uffff',
  'a'.repeat(600),
  '(' .repeat(50),
  'x-'.repeat(300),
];

/** Raw bytes that are not UTF-8 (a lone surrogate as WTF-8 / CESU-8, overlong forms, stray bytes). */
export const NOT_UTF8: readonly Buffer[] = [
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xed, 0xb0, 0x80]),
  Buffer.from([0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]),
  Buffer.from([0xc0, 0x80]),
  Buffer.from([0xff]),
  Buffer.from([0x80]),
  Buffer.from([0xf4, 0x90, 0x80, 0x80]),
  Buffer.from([0xe2, 0x82]),
];

/** A string of `units` UTF-16 units built from `piece`. */
export function hugeText(piece: string, units: number): string {
  return piece.repeat(Math.ceil(units / piece.length)).slice(0, units);
}

export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
