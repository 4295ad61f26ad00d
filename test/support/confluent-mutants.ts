import { knownSchemas } from '../../src/stream/avro/index.ts';
import { BASE_NOTES } from './note-mutants.ts';
import { int, noteEventBody, pick, rawNote, type MutantRecord, type Random } from './note-mutations.ts';
import type { SchemaRegistryStandIn } from './schema-registry-stand-in.ts';

/**
 * Confluent-framed NoteEvent mutants (magic byte 0, a 4-byte schema id, the Avro body) for the
 * stream-stage fuzz test, over a registry stand-in that holds what a shared registry may hold:
 * the current and v1 NoteEvent, another record kind, an evolution with a recursive field, an
 * incompatible one, and schemas that are no Avro NoteEvent at all.
 */
export interface RegistryIds {
  current: number;
  v1: number;
  linkedNote: number;
  /** The current NoteEvent plus `previous: ["null", NoteEvent]` (a compatible evolution). */
  recursive: number;
  /** noteId an int: the current reader cannot resolve it. */
  incompatible: number;
  /** Schemas the registry client cannot parse as Avro, or that are not Avro. */
  foreign: number[];
}

export function registerSchemas(registry: SchemaRegistryStandIn): RegistryIds {
  const schemas = knownSchemas();
  const raw = schemas.current('NoteEvent').raw as { fields: { name: string }[] };
  const withFields = (fields: unknown[]) => JSON.stringify({ ...raw, fields });
  return {
    current: registry.register('cuilink.notes-value', JSON.stringify(raw)),
    v1: registry.register('cuilink.notes-value', JSON.stringify(schemas.all('NoteEvent').find((s) => !s.current)!.raw)),
    linkedNote: registry.register('cuilink.linked-value', JSON.stringify(schemas.current('LinkedNote').raw)),
    recursive: registry.register('cuilink.notes-value', withFields([...raw.fields, { name: 'previous', type: ['null', 'org.cuilink.NoteEvent'], default: null }])),
    incompatible: registry.register('other-notes-value', withFields(raw.fields.map((f) => (f.name === 'noteId' ? { name: 'noteId', type: 'int' } : f)))),
    foreign: [
      registry.register('json-value', JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', javaType: 'org.example.Note' }), 'JSON'),
      registry.register('json-2020-value', JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }), 'JSON'),
      registry.register('json-plain-value', JSON.stringify({ type: 'object', properties: { id: { type: 'string' } } }), 'JSON'),
      registry.register('proto-value', 'syntax = "proto3";\npackage x;\nmessage Note { string id = 1; }\n', 'PROTOBUF'),
      registry.register('xml-value', '<schema/>', 'XML'),
      registry.register('bad-default-value', JSON.stringify({ type: 'record', name: 'NoteEvent', namespace: 'org.cuilink', fields: [{ name: 'noteId', type: 'string', default: 5 }] })),
    ],
  };
}

/** `body` in the Confluent wire format: magic byte 0, then the 4-byte schema id. */
export function framed(id: number, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeInt32BE(id, 1);
  return Buffer.concat([header, body]);
}

/** One Confluent mutant of a base note; `ids` are those registerSchemas returned. */
export function confluentMutant(random: Random, ids: RegistryIds): MutantRecord & { mutation: string; base: string } {
  const base = pick(random, BASE_NOTES);
  const body = noteEventBody(rawNote(base));
  const variant = pick(random, ['current', 'v1', 'v1 id, v2 body', 'unknown id', 'LinkedNote id', 'incompatible', 'foreign', 'recursive', 'bits flipped'] as const);
  const record = (what: string, value: Buffer, expect?: MutantRecord['expect']): MutantRecord & { mutation: string; base: string } => ({ what, value, headers: [], expect, mutation: 'confluent', base: base.noteId });
  switch (variant) {
    case 'current':
      return record('registered current NoteEvent', framed(ids.current, body), 'linked');
    case 'v1':
      return record('registered v1 NoteEvent', framed(ids.v1, noteEventBody(rawNote(base), 1)), 'linked');
    case 'v1 id, v2 body':
      return record('v2 body under the v1 id', framed(ids.v1, body), { code: 'UNDECODABLE' });
    case 'unknown id': {
      const id = 1000 + int(random, 2 ** 30);
      return record(`unregistered id ${id}`, framed(id, body), { code: 'UNKNOWN_SCHEMA' });
    }
    case 'LinkedNote id':
      return record('the LinkedNote schema id', framed(ids.linkedNote, body), { code: 'UNKNOWN_SCHEMA' });
    case 'incompatible':
      return record('an incompatible NoteEvent writer schema', framed(ids.incompatible, body), { code: 'INCOMPATIBLE_SCHEMA' });
    case 'foreign': {
      const id = pick(random, ids.foreign);
      return record(`schema id ${id}, no Avro NoteEvent`, framed(id, Buffer.from('{"noteId":"n"}')), { code: 'UNKNOWN_SCHEMA' });
    }
    case 'recursive': {
      // Each level a whole NoteEvent and the branch of `previous`; the last level's is null. Two
      // values nest per level: 40 levels are past the walk's bound of 64 (avro-bounds.ts).
      const depth = pick(random, [1, 2, 10, 40, 100, 1000, 20_000]);
      const levels = Array.from({ length: depth }, (_, i) => Buffer.concat([body, Buffer.from([i === depth - 1 ? 0 : 2])]));
      return record(`recursive evolution nested ${depth} deep`, framed(ids.recursive, Buffer.concat(levels)), depth <= 10 ? 'linked' : 'dead');
    }
    case 'bits flipped': {
      const value = framed(pick(random, [ids.current, ids.recursive, ids.v1]), body);
      for (let i = 0, flips = 1 + int(random, 3); i < flips; i++) value[int(random, value.length)]! ^= 1 << int(random, 8);
      return record('bits flipped in a framed record', value);
    }
  }
}
