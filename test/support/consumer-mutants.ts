import { knownSchemas, SCHEMA_FINGERPRINT_HEADER, toSingleObject, type GoldMentionRecord, type LinkedNoteRecord, type RecordKind } from '../../src/stream/avro/index.ts';
import { CANDIDATES_CUT_HEADER } from '../../src/stream/output-fitter.ts';
import { writeAvro } from './avro-writer.ts';
import { framed } from './confluent-mutants.ts';
import { GOLD_MUTATIONS, LINKED_MUTATIONS, type FieldMutation } from './consumer-field-mutations.ts';
import { int, pick, type MutantRecord, type Random } from './note-mutations.ts';
import type { SchemaRegistryStandIn } from './schema-registry-stand-in.ts';

/**
 * GoldMention and LinkedNote records mutated the many ways a producer, a broker or a disk can get
 * them wrong, for the fuzz tests of the stage's downstream consumers (the sidecar evaluator, the
 * memory updater): the byte-level faults of test/support/note-mutants.ts, made generic over the
 * record kind, the field-level extremes of consumer-field-mutations.ts, and the Confluent framing
 * over a registry stand-in that holds what a shared registry may hold.
 */

/** What the consumer must make of a record: hand it on decoded, skip it (with this code), or either. */
export type ConsumerExpectation = 'delivered' | 'skipped' | { code: string };

export interface ConsumerMutant extends Omit<MutantRecord, 'expect'> {
  kind: RecordKind;
  mutation: string;
  /** The base record's note id. */
  base: string;
  expect?: ConsumerExpectation;
  /** The fields as written, for a field-level mutant: a consumer with rules of its own reads its expectation from them. */
  fields?: Record<string, unknown>;
}

/** The valid records the mutants start from; gold and linked notes of the same notes, so that they join. */
export interface ConsumerBases {
  gold: readonly GoldMentionRecord[];
  linked: readonly LinkedNoteRecord[];
}

/** A valid record of `kind` to mutate. */
export interface ConsumerBase {
  kind: RecordKind;
  record: { noteId: string };
}
type Base = ConsumerBase;
type Mutation = (random: Random, base: Base) => Omit<ConsumerMutant, 'kind' | 'mutation' | 'base'>;

const current = (kind: RecordKind) => knownSchemas().current(kind);
export const bodyOf = (kind: RecordKind, record: unknown): Buffer => writeAvro(current(kind).type, record);
export const singleObjectOf = (kind: RecordKind, record: unknown): Buffer => toSingleObject(current(kind).singleObjectFingerprint, bodyOf(kind, record));

function flip(value: Buffer, random: Random, from: number): Buffer {
  const out = Buffer.from(value);
  for (let i = 0, flips = 1 + int(random, 4); i < flips; i++) out[from + int(random, out.length - from)]! ^= 1 << int(random, 8);
  return out;
}

/** Faults of the bytes, whatever the kind: the same catalogue the stage's fuzz draws from. */
const BYTE_MUTATIONS: Record<string, Mutation> = {
  flipAnyBits: (r, b) => ({ what: 'bits flipped anywhere', value: flip(singleObjectOf(b.kind, b.record), r, 0), headers: [] }),
  flipBodyBits: (r, b) => ({ what: 'bits flipped in the body', value: flip(singleObjectOf(b.kind, b.record), r, 10), headers: [] }),
  truncate: (r, b) => {
    const value = singleObjectOf(b.kind, b.record);
    const at = int(r, value.length);
    return { what: `cut to ${at} bytes`, value: value.subarray(0, at), headers: [], expect: 'skipped' };
  },
  extend: (r, b) => {
    const extra = Buffer.from(Array.from({ length: 1 + int(r, 16) }, () => int(r, 256)));
    return { what: `${extra.length} bytes appended`, value: Buffer.concat([singleObjectOf(b.kind, b.record), extra]), headers: [], expect: { code: 'UNDECODABLE' } };
  },
  splice: (r, b) => {
    const value = singleObjectOf(b.kind, b.record);
    const [at, length] = [10 + int(r, value.length - 10), 1 + int(r, 8)];
    const dropped = r() < 0.5;
    const out = dropped ? Buffer.concat([value.subarray(0, at), value.subarray(at + length)]) : Buffer.concat([value.subarray(0, at + length), value.subarray(at)]);
    return { what: `${length} bytes at ${at} ${dropped ? 'dropped' : 'repeated'}`, value: out, headers: [] };
  },
  varintBomb: (r, b) => {
    const value = singleObjectOf(b.kind, b.record);
    const at = 10 + int(r, value.length - 10);
    const bomb = Buffer.from([...Array.from({ length: int(r, 12) }, () => 0xff), int(r, 128)]);
    return { what: `varint ${bomb.toString('hex')} inserted at ${at}`, value: Buffer.concat([value.subarray(0, at), bomb, value.subarray(at)]), headers: [] };
  },
  wrongMagic: (r, b) => {
    const value = Buffer.from(singleObjectOf(b.kind, b.record));
    const at = int(r, 2);
    value[at] = (value[at]! + 1 + int(r, 255)) & 0xff;
    return { what: `magic byte ${at} = ${value[at]}`, value, headers: [], expect: 'skipped' };
  },
  wrongFingerprint: (r, b) => {
    const value = Buffer.from(singleObjectOf(b.kind, b.record));
    const at = 2 + int(r, 8);
    value[at]! ^= 1 + int(r, 255);
    return { what: `fingerprint byte ${at} changed`, value, headers: [], expect: { code: 'UNKNOWN_SCHEMA' } };
  },
  otherKindFingerprint: (r, b) => {
    const kinds = (['NoteEvent', 'LinkedNote', 'GoldMention', 'DeadLetter', 'ReviewMention', 'LabelRequest'] as const).filter((k) => k !== b.kind);
    const other = pick(r, kinds.flatMap((k) => knownSchemas().all(k)));
    const value = Buffer.from(singleObjectOf(b.kind, b.record));
    other.singleObjectFingerprint.copy(value, 2);
    return { what: `fingerprint of ${other.file}`, value, headers: [], expect: { code: 'UNKNOWN_SCHEMA' } };
  },
  schemaVersions: (r, b) => {
    // Every version of the kind the readers know (schemas/history/): a body written with one, under the fingerprint of one.
    const versions = knownSchemas().all(b.kind);
    const [writer, named] = [pick(r, versions), pick(r, versions)];
    const value = toSingleObject(named.singleObjectFingerprint, writeAvro(writer.type, b.record));
    return { what: `a ${writer.file} body under the fingerprint of ${named.file}`, value, headers: [], expect: writer === named ? 'delivered' : undefined };
  },
  fingerprintHeader: (r, b) => {
    const fingerprint = current(b.kind).fingerprint;
    const variant = pick(r, ['as written', 'upper case', 'other schema', 'garbage', 'empty', 'null', 'beside a single-object value'] as const);
    const header: Record<typeof variant, string | Buffer | null> = {
      'as written': fingerprint, 'upper case': fingerprint.toUpperCase(), 'other schema': current(b.kind === 'LinkedNote' ? 'GoldMention' : 'LinkedNote').fingerprint,
      garbage: Buffer.from([0xff, 0xfe, 0x00, 0xed, 0xa0, 0x80]), empty: '', null: null, 'beside a single-object value': '0'.repeat(64),
    };
    const value = variant === 'beside a single-object value' ? singleObjectOf(b.kind, b.record) : bodyOf(b.kind, b.record);
    return { what: `deprecated fingerprint header: ${variant}`, value, headers: [[SCHEMA_FINGERPRINT_HEADER, header[variant]]], expect: variant === 'as written' || variant === 'upper case' ? 'delivered' : 'skipped' };
  },
  confluentFraming: (r, b) => {
    const id = Buffer.alloc(4);
    id.writeInt32BE(int(r, 2 ** 31) * (r() < 0.5 ? -1 : 1));
    return { what: `Confluent framing, schema id ${id.readInt32BE()}`, value: Buffer.concat([Buffer.from([0]), id, bodyOf(b.kind, b.record)]), headers: [], expect: 'skipped' };
  },
  emptyValue: (r) => {
    const value = pick(r, [null, Buffer.alloc(0)]);
    return { what: `value ${value === null ? 'null (tombstone)' : 'of 0 bytes'}`, value, headers: [], expect: 'skipped' };
  },
  garbage: (r, b) => {
    const body = Buffer.from(Array.from({ length: int(r, 64) }, () => int(r, 256)));
    return { what: `random body of ${body.length} bytes`, value: Buffer.concat([singleObjectOf(b.kind, b.record).subarray(0, 10), body]), headers: [] };
  },
  keysAndHeaders: (r, b) => {
    const key = pick(r, [null, Buffer.alloc(0), Buffer.alloc(2_000_000, 0x6b), Buffer.from([0xff, 0xed, 0xa0, 0x80])]);
    const headers: MutantRecord['headers'] = Array.from({ length: int(r, 4) }, () => [
      pick(r, ['traceparent', 'cuilink-schema', CANDIDATES_CUT_HEADER, '__proto__', 'constructor', '', '\u0000']),
      pick(r, [null, '', '0', '-1', '3', '1e400', 'NaN', '99999999999999999999', Buffer.from([0xff, 0x00, 0xed]), 'x'.repeat(10_000)]),
    ]);
    return { what: `key of ${key === null ? 'null' : `${key.length} bytes`}, headers ${JSON.stringify(headers.map(([k, v]) => [k, typeof v === 'string' ? v.slice(0, 20) : v]))}`, value: singleObjectOf(b.kind, b.record), headers, key, expect: 'delivered' };
  },
};

/** Mutations of `kind`'s records: the byte-level ones and, for gold and linked notes, the kind's own field-level ones. */
function catalogue(kind: RecordKind): Record<string, Mutation> {
  const fields: Record<string, FieldMutation<never>> = kind === 'GoldMention' ? GOLD_MUTATIONS : kind === 'LinkedNote' ? LINKED_MUTATIONS : {};
  const own = Object.fromEntries(
    Object.entries(fields).map(([name, mutate]): [string, Mutation] => [
      name,
      (r, b) => {
        const { what, record, expect } = mutate(r, structuredClone(b.record) as never);
        return { what, value: singleObjectOf(b.kind, record), headers: [], expect, fields: record as Record<string, unknown> };
      },
    ]),
  );
  return { ...BYTE_MUTATIONS, ...own };
}

/** The names of every mutation of `kind`'s records: what a run must have drawn. */
export const mutationNames = (kind: RecordKind): string[] => Object.keys(catalogue(kind));

/** One mutant of `base`, by a mutation drawn from `random`. */
export function consumerMutant(random: Random, base: ConsumerBase): ConsumerMutant {
  return consumerMutantBy(random, base, pick(random, mutationNames(base.kind)));
}

/** One mutant of `base` by the named mutation (one of mutationNames(base.kind)). */
export function consumerMutantBy(random: Random, base: ConsumerBase, mutation: string): ConsumerMutant {
  return { ...catalogue(base.kind)[mutation]!(random, base), kind: base.kind, mutation, base: base.record.noteId };
}

/** A base gold label or linked note drawn from `bases`. */
export function drawBase(random: Random, kind: 'GoldMention' | 'LinkedNote', bases: ConsumerBases): ConsumerBase {
  return kind === 'GoldMention' ? { kind, record: pick(random, bases.gold) } : { kind, record: pick(random, bases.linked) };
}

type ConsumerKind = 'GoldMention' | 'LinkedNote';

/** Schema ids in the registry stand-in, for the Confluent mutants. */
export interface ConsumerRegistryIds {
  current: Record<ConsumerKind, number>;
  /** The kind's older versions (schemas/history/), by file. */
  older: Record<ConsumerKind, { id: number; file: string }[]>;
  /** The kind plus `previous: ["null", <kind>]`: a compatible, recursive evolution. */
  recursive: Record<ConsumerKind, number>;
  /** noteId an int: not readable as the current kind. */
  incompatible: Record<ConsumerKind, number>;
  /** Other record kinds, and schemas that are no Avro at all. */
  foreign: number[];
}

export function registerConsumerSchemas(registry: SchemaRegistryStandIn): ConsumerRegistryIds {
  const kinds = ['GoldMention', 'LinkedNote'] as const;
  const raw = (kind: RecordKind) => current(kind).raw as { name: string; namespace: string; fields: { name: string }[] };
  const evolved = (kind: RecordKind, fields: unknown[]) => JSON.stringify({ ...raw(kind), fields });
  const each = <T>(make: (kind: (typeof kinds)[number]) => T) => Object.fromEntries(kinds.map((k) => [k, make(k)])) as Record<ConsumerKind, T>;
  return {
    current: each((k) => registry.register(`${k}-value`, JSON.stringify(raw(k)))),
    older: each((k) => knownSchemas().all(k).filter((s) => !s.current).map((s) => ({ id: registry.register(`${k}-value`, JSON.stringify(s.raw)), file: s.file }))),
    recursive: each((k) => registry.register(`${k}-value`, evolved(k, [...raw(k).fields, { name: 'previous', type: ['null', `${raw(k).namespace}.${raw(k).name}`], default: null }]))),
    incompatible: each((k) => registry.register(`other-${k}-value`, evolved(k, raw(k).fields.map((f) => (f.name === 'noteId' ? { name: 'noteId', type: 'int' } : f))))),
    foreign: [
      registry.register('notes-value', JSON.stringify(current('NoteEvent').raw)),
      registry.register('json-value', JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' }), 'JSON'),
      registry.register('proto-value', 'syntax = "proto3";\npackage x;\nmessage Gold { string id = 1; }\n', 'PROTOBUF'),
      registry.register('xml-value', '<schema/>', 'XML'),
      registry.register('bad-default-value', JSON.stringify({ type: 'record', name: 'GoldMention', namespace: 'org.cuilink', fields: [{ name: 'noteId', type: 'string', default: 5 }] })),
    ],
  };
}

/** A Confluent-framed record of `kind` (for a consumer reading through the registry). */
export function confluentConsumerMutant(random: Random, kind: ConsumerKind, bases: ConsumerBases, ids: ConsumerRegistryIds): ConsumerMutant {
  const record = kind === 'GoldMention' ? pick(random, bases.gold) : pick(random, bases.linked);
  const body = bodyOf(kind, record);
  const variant = pick(random, ['current', 'older', 'unknown id', 'incompatible', 'foreign', 'recursive', 'bits flipped'] as const);
  const out = (what: string, value: Buffer, expect?: ConsumerExpectation): ConsumerMutant => ({ what, value, headers: [], expect, kind, mutation: 'confluent', base: record.noteId });
  switch (variant) {
    case 'current':
      return out('registered current schema', framed(ids.current[kind], body), 'delivered');
    case 'older': {
      const older = ids.older[kind];
      if (older.length === 0) return out('registered current schema', framed(ids.current[kind], body), 'delivered');
      const { id, file } = pick(random, older);
      return out(`registered ${file}`, framed(id, writeAvro(knownSchemas().all(kind).find((s) => s.file === file)!.type, record)), 'delivered');
    }
    case 'unknown id': {
      const id = 1000 + int(random, 2 ** 30);
      return out(`unregistered id ${id}`, framed(id, body), { code: 'UNKNOWN_SCHEMA' });
    }
    case 'incompatible':
      return out('an incompatible writer schema', framed(ids.incompatible[kind], body), { code: 'INCOMPATIBLE_SCHEMA' });
    case 'foreign': {
      const id = pick(random, ids.foreign);
      return out(`schema id ${id}, no Avro ${kind}`, framed(id, body), { code: 'UNKNOWN_SCHEMA' });
    }
    case 'recursive': {
      // Each level the whole record and the branch of `previous`: about two values nest per level,
      // so 40 levels are past the decoder's bound of 64 (src/stream/avro/avro-bounds.ts).
      const depth = pick(random, [1, 2, 10, 40, 1000, 20_000]);
      const levels = Array.from({ length: depth }, (_, i) => Buffer.concat([body, Buffer.from([i === depth - 1 ? 0 : 2])]));
      return out(`recursive evolution nested ${depth} deep`, framed(ids.recursive[kind], Buffer.concat(levels)), depth <= 10 ? 'delivered' : 'skipped');
    }
    case 'bits flipped': {
      const value = framed(pick(random, [ids.current[kind], ids.recursive[kind]]), body);
      for (let i = 0, flips = 1 + int(random, 3); i < flips; i++) value[int(random, value.length)]! ^= 1 << int(random, 8);
      return out('bits flipped in a framed record', value);
    }
  }
}
