import { createHash } from 'node:crypto';
import { knownSchemas, PlainAvroCodec, SCHEMA_FINGERPRINT_HEADER, type DeadLetterRecord } from '../../src/stream/avro/index.ts';
import { AvroStageCodec } from '../../src/stream/avro/avro-stage-codec.ts';
import { REPLAYED_FROM_HEADER } from '../../src/stream/dead-letter-replay.ts';
import { RECORD_FAULT_CODES } from '../../src/stream/dead-letter-policy.ts';
import type { DeadLetterInfo } from '../../src/stream/stage-codec.ts';
import { UnionBranch } from './avro-writer.ts';
import { consumerMutantBy, mutationNames as byteMutationNames, singleObjectOf, type ConsumerExpectation } from './consumer-mutants.ts';
import { BASE_NOTES } from './note-mutants.ts';
import { HOSTILE_TEXTS, hugeText, int, NOT_UTF8, pick, rawNote, singleObject, type MutantRecord, type Random } from './note-mutations.ts';

/**
 * Records of a dead-letter topic mutated the ways a broker, a disk, a hand-written record or
 * another tool's producer gets them wrong, for the fuzz test of `cuilink dlq inspect`/`replay` and
 * `cuilink topics read` (test/unit/cli/dead-letter-tools-fuzz.test.ts): the byte-level faults of
 * test/support/consumer-mutants.ts, and each DeadLetter field at its extremes as an Avro writer
 * that validates nothing writes it (times past what a Date holds, longs past 2^53, hashes that
 * are no hex, header names a plain object holds as members, originals of another record type).
 */

export interface DeadLetterMutant extends Omit<MutantRecord, 'expect'> {
  mutation: string;
  /** The base letter's error code. */
  base: string;
  expect?: ConsumerExpectation;
  /** The Kafka record's own timestamp (epoch ms as the client gives it); the test's fixed one when absent. */
  timestamp?: bigint;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Dead letters as the stage writes them (AvroStageCodec.encodeDeadLetter), read back: the valid records the mutants start from. */
export async function deadLetterBases(): Promise<DeadLetterRecord[]> {
  const plain = new PlainAvroCodec();
  const stage = new AvroStageCodec(plain);
  const note = singleObject(rawNote(BASE_NOTES[0]!));
  const linked = knownSchemas().current('LinkedNote').fingerprint;
  const at = { sourceTopic: 'cuilink.notes', sourcePartition: 0, stage: 'decode', failedAt: 1_767_225_600_000 };
  const infos: DeadLetterInfo[] = [
    { ...at, sourceOffset: '7', errorCode: 'NOTE_TOO_LARGE', reason: 'note n1: 80 characters exceeds the limit of 10', key: Buffer.from('n1'), value: note, headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } },
    { ...at, sourceOffset: '8', errorCode: 'UNKNOWN_SCHEMA', reason: 'unknown writer schema', key: Buffer.from('n2'), value: Buffer.from('body'), headers: { [SCHEMA_FINGERPRINT_HEADER]: linked } },
    { ...at, sourceOffset: '9', errorCode: 'UNDECODABLE', reason: 'truncated', key: null, value: note.subarray(0, 20), headers: {} },
    { ...at, sourceOffset: '10', errorCode: 'EMPTY_RECORD', reason: 'record has no value (tombstone or empty)', key: Buffer.from('n3'), value: null, headers: {} },
    { ...at, sourceOffset: '11', errorCode: 'OUTPUT_TOO_LARGE', reason: 'cut', key: Buffer.from('n4'), value: note.subarray(0, 32), headers: {}, truncated: { sha256: sha256(note), size: note.length } },
    { ...at, sourceOffset: '12', errorCode: 'SPAN_TEXT_MISMATCH', reason: 'again', key: Buffer.from('n5'), value: note, headers: { [REPLAYED_FROM_HEADER]: 'cuilink.dead-letter/0/3', 'x-a': ['1', '2'] } },
  ];
  const letters: DeadLetterRecord[] = [];
  for (const info of infos) letters.push(await plain.decode('DeadLetter', (await stage.encodeDeadLetter(info, 'cuilink.dead-letter')).value));
  return letters;
}

type FieldMutation = (r: Random, letter: DeadLetterRecord) => { what: string; record: Record<string, unknown>; expect?: ConsumerExpectation };

/** Epoch-ms values a long holds and a Date may not (±8.64e15 ms is the most a Date holds). */
const TIMES: readonly (number | bigint)[] = [0, -1, 8.64e15, 8.64e15 + 1, -8.64e15 - 1, 2 ** 53 - 1, -(2 ** 53) + 1, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n)];
const LONGS: readonly (number | bigint)[] = [0, -1, 2 ** 31 - 1, -(2 ** 31), 2 ** 53 - 1, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n)];
const INTS: readonly number[] = [0, -1, 2 ** 31 - 1, -(2 ** 31)];

function oddText(r: Random): { value: string | Buffer; what: string; utf8: boolean } {
  if (r() < 0.7) {
    const value = pick(r, [...HOSTILE_TEXTS, '__proto__', 'constructor', '"quoted"\n', hugeText('é', 100_001)]);
    return { value, what: JSON.stringify(value.slice(0, 12)), utf8: true };
  }
  const bad = pick(r, NOT_UTF8);
  return { value: Buffer.concat([Buffer.from('x'), bad]), what: `bytes ${bad.toString('hex')}`, utf8: false };
}

const FIELD_MUTATIONS: Record<string, FieldMutation> = {
  failedAt: (r, l) => {
    const failedAt = pick(r, TIMES);
    return { what: `failedAt ${failedAt}`, record: { ...l, failedAt } };
  },
  position: (r, l) => {
    const [partition, offset] = [pick(r, INTS), pick(r, LONGS)];
    return { what: `source partition ${partition} offset ${offset}`, record: { ...l, partition, offset } };
  },
  originalSize: (r, l) => {
    const size = pick(r, [null, 0, -1, 1, 2n ** 53n + 1n, 2n ** 63n - 1n]);
    return { what: `originalSize ${size}`, record: { ...l, originalSize: size === null ? null : size } };
  },
  originalSha256: (r, l) => {
    const value = pick(r, [null, '', 'ZZ', 'a'.repeat(64), 'A'.repeat(64), sha256(Buffer.from('other')), 'x'.repeat(100_000)]);
    return { what: `originalSha256 ${value === null ? 'null' : JSON.stringify(value.slice(0, 12))}`, record: { ...l, originalSha256: value } };
  },
  errorCode: (r, l) => {
    const code = pick(r, [...RECORD_FAULT_CODES, '', 'NOT_A_CODE', '__proto__', 'constructor', 'toString', 'INTERNAL', 'undecodable']);
    return { what: `errorCode ${JSON.stringify(code)}`, record: { ...l, errorCode: code } };
  },
  originalTruncated: (r, l) => ({ what: 'originalTruncated flipped', record: { ...l, originalTruncated: !l.originalTruncated, originalSize: r() < 0.5 ? null : l.originalSize } }),
  original: (r, l) => {
    const kind = pick(r, ['LinkedNote', 'GoldMention', 'DeadLetter', 'LabelRequest'] as const);
    const [variant, value] = pick<[string, Buffer | null]>(r, [
      ['null', null],
      ['empty', Buffer.alloc(0)],
      ['random bytes', Buffer.from(Array.from({ length: int(r, 64) }, () => int(r, 256)))],
      ['a NoteEvent', singleObject(rawNote(pick(r, BASE_NOTES)))],
      [`a single-object marker and a ${kind} fingerprint`, Buffer.concat([Buffer.from([0xc3, 0x01]), knownSchemas().current(kind).singleObjectFingerprint, Buffer.from('x')])],
      ['a Confluent magic byte', Buffer.concat([Buffer.from([0, 0, 0, 0, 7]), Buffer.from('body')])],
      ['a 2 MB value', Buffer.alloc(2 << 20, 0x61)],
    ]);
    // Its hash and size kept or made to match: replay checks the one against the other.
    const matched = r() < 0.5 && value !== null;
    return { what: `original ${variant}${matched ? ' (hash and size its own)' : ''}`, record: { ...l, original: value, ...(matched ? { originalSha256: sha256(value), originalSize: value.length } : {}) } };
  },
  originalHeaders: (r, l) => {
    const names = ['__proto__', 'constructor', 'toString', '', '\u0000', REPLAYED_FROM_HEADER, SCHEMA_FINGERPRINT_HEADER, 'traceparent', 'x-a'];
    const values: (Buffer | null)[] = [null, Buffer.alloc(0), Buffer.from('0'.repeat(64)), Buffer.from(knownSchemas().current(pick(r, ['LinkedNote', 'NoteEvent'] as const)).fingerprint), Buffer.from([0xff, 0xed, 0xa0, 0x80]), Buffer.alloc(100_000, 0x41)];
    const count = pick(r, [1, 2, 5, 10_000]);
    const headers = Array.from({ length: count }, () => ({ key: pick(r, names), value: pick(r, values) }));
    return { what: `${count} original headers (${headers.slice(0, 3).map((h) => JSON.stringify(h.key)).join(', ')}…)`, record: { ...l, originalHeaders: r() < 0.5 ? headers : [...l.originalHeaders, ...headers] } };
  },
  originalKey: (r, l) => {
    const key = pick(r, [null, Buffer.alloc(0), Buffer.from(' '), Buffer.from([0xff, 0x00, 0xed]), Buffer.alloc(2 << 20, 0x6b), Buffer.from('é'.repeat(100))]);
    return { what: `originalKey ${key === null ? 'null' : `${key.length} bytes`}`, record: { ...l, originalKey: key } };
  },
  texts: (r, l) => {
    const field = pick(r, ['reason', 'stage', 'sourceTopic', 'errorCode'] as const);
    const odd = oddText(r);
    return { what: `${field} = ${odd.what}`, record: { ...l, [field]: odd.value }, expect: odd.utf8 ? 'delivered' : { code: 'BAD_TEXT_ENCODING' } };
  },
  badUnion: (r, l) => {
    const field = pick(r, ['originalKey', 'original', 'originalSha256', 'originalSize'] as const);
    const branch = pick(r, [2, -1, 0x3f]);
    return { what: `${field} union branch ${branch}`, record: { ...l, [field]: new UnionBranch(branch, 'x') }, expect: { code: 'UNDECODABLE' } };
  },
};

/** Faults of the Kafka record around a valid dead letter: its key and its own timestamp. */
const RECORD_MUTATIONS: Record<string, (r: Random, l: DeadLetterRecord) => Omit<DeadLetterMutant, 'mutation' | 'base'>> = {
  recordTimestamp: (r, l) => {
    const timestamp = pick(r, [0n, -1n, 8_640_000_000_000_000n, 8_640_000_000_000_001n, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n)]);
    return { what: `record timestamp ${timestamp}`, value: singleObjectOf('DeadLetter', l), headers: [], timestamp, expect: 'delivered' };
  },
};

export const DEAD_LETTER_MUTATIONS = [...byteMutationNames('DeadLetter'), ...Object.keys(FIELD_MUTATIONS), ...Object.keys(RECORD_MUTATIONS)];

/** One mutant of `letter` (a base), by a mutation drawn from `random`. */
export function deadLetterMutant(random: Random, letter: DeadLetterRecord): DeadLetterMutant {
  const mutation = pick(random, DEAD_LETTER_MUTATIONS);
  const base = letter.errorCode;
  const field = FIELD_MUTATIONS[mutation];
  if (field !== undefined) {
    const { what, record, expect } = field(random, { ...letter });
    return { mutation, base, what, value: singleObjectOf('DeadLetter', record), headers: [], expect };
  }
  const around = RECORD_MUTATIONS[mutation];
  if (around !== undefined) return { mutation, base, ...around(random, letter) };
  // The byte-level catalogue names a base by its note id: a dead letter has none, its code will do.
  return { ...consumerMutantBy(random, { kind: 'DeadLetter', record: { ...letter, noteId: base } }, mutation), base };
}
