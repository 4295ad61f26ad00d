import { test } from 'node:test';
import assert from 'node:assert/strict';
import avro from 'avsc';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { seededRandom } from '../../../src/eval/seeded-random.ts';
import {
  ConfluentAvroCodec,
  crc64Avro,
  KnownSchemas,
  knownSchemas,
  noteEventToNoteInput,
  parsingCanonicalForm,
  PlainAvroCodec,
  RECORD_KINDS,
  singleObjectFingerprint,
  type RecordKind,
} from '../../../src/stream/avro/index.ts';

// Reference values, computed outside this code base:
// - Java: org.apache.avro:avro 1.12.2, SchemaNormalization.parsingFingerprint64 (what
//   BinaryMessageEncoder writes and BinaryMessageDecoder looks up), its long written little-endian;
//   SchemaNormalization.toParsingForm gave the same canonical form as avsc for every file.
// - Python: fastavro 1.13.1, fingerprint(to_parsing_canonical_form(schema), 'CRC-64-AVRO'): the same
//   hex for every file. (The `avro` 1.12.2 Python package differs for the schemas with a
//   timestamp-millis field: its canonical form keeps {"type":"long"} where the spec and Java
//   reduce it to "long".)
const SHIPPED: Record<string, string> = {
  'schemas/note-event.avsc': '7c20aeb1aea1bad3',
  'schemas/history/note-event.v1.avsc': '13b952f7a3f4a7cc',
  'schemas/linked-note.avsc': 'e3098c65fff31fe5',
  'schemas/history/linked-note.v3.avsc': '6e13d064cb3f02b4',
  'schemas/history/linked-note.v1.avsc': '67b4a0de835baad6',
  'schemas/history/linked-note.v2.avsc': '56126f28bf5e0cb3',
  'schemas/gold-mention.avsc': '5d1bb2ddcd178d40',
  'schemas/dead-letter.avsc': 'f76410eb82215e7a',
  'schemas/history/dead-letter.v1.avsc': '6111e50cf9af6c2e',
  'schemas/review-mention.avsc': '127f06fa0a771e4b',
  'schemas/history/review-mention.v1.avsc': '76d2f7b289a38d7b',
  'schemas/label-request.avsc': '8039e098f09143a3',
};

/**
 * A NoteEvent written by Java: `new BinaryMessageEncoder<GenericRecord>(GenericData.get(), schema).encode(note)`
 * with schemas/note-event.avsc (Avro 1.12.2) and noteId java-1, text "Mother reports ataxia.", one
 * mention m1 [15, 21) "ataxia" Phenotype 0.9, source null, timestamp 1732406400000, nerModelVersion java-ner.
 */
const JAVA_NOTE_EVENT = Buffer.from(
  'c3017c20aeb1aea1bad30c6a6176612d312c4d6f74686572207265706f727473206174617869612e02046d311e2a0c617461786961125068656e6f7479706502cdccccccccccec3f000080d0beb7eb6402106a6176612d6e6572',
  'hex',
);
const JAVA_NOTE = { noteId: 'java-1', text: 'Mother reports ataxia.', mentions: [{ id: 'm1', start: 15, end: 21, text: 'ataxia', label: 'Phenotype', score: 0.9 }], source: null, timestamp: 1732406400000, nerModelVersion: 'java-ner' };

function fingerprintHex(canonical: string): string {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64LE(crc64Avro(Buffer.from(canonical)));
  return bytes.toString('hex');
}

test('CRC-64-AVRO of primitive schemas: the values Java, fastavro and the Python avro package compute', () => {
  assert.equal(crc64Avro(Buffer.alloc(0)), 0xc15d213aa4d7a795n, 'the spec\'s EMPTY');
  // "int": Java's parsingFingerprint64 is 8247732601305521295 = 0x7275d51a3f395c8f.
  assert.equal(crc64Avro(Buffer.from('"int"')), 8247732601305521295n);
  assert.equal(fingerprintHex('"int"'), '8f5c393f1ad57572');
  assert.equal(fingerprintHex('"null"'), '8a8f25cce724dd63');
  assert.equal(fingerprintHex('"string"'), 'c70345637248018f');
});

test('every shipped schema has the single-object fingerprint Java and fastavro compute for it', () => {
  const schemas = new KnownSchemas();
  const shipped = Object.fromEntries(
    (Object.keys(RECORD_KINDS) as RecordKind[])
      .flatMap((kind) => schemas.all(kind))
      .map((s) => [`schemas/${s.file.split('schemas/').at(-1)}`, s.singleObjectFingerprint.toString('hex')]),
  );
  assert.deepEqual(shipped, SHIPPED, 'a new or changed schema: add its fingerprint here from Java or fastavro, and to docs/stream-formats.md');
  for (const kind of Object.keys(RECORD_KINDS) as RecordKind[]) {
    for (const s of schemas.all(kind)) {
      assert.equal(schemas.bySingleObjectHeader(s.singleObjectFingerprint), s);
      assert.deepEqual(singleObjectFingerprint(s.type), s.singleObjectFingerprint);
    }
  }
});

test('the canonical form reduces a logical type to its underlying type and drops docs and defaults, as the spec (and Java) do', () => {
  const type = avro.Type.forSchema({
    type: 'record',
    name: 'R',
    namespace: 'org.x',
    doc: 'dropped',
    fields: [
      { name: 'at', type: { type: 'long', logicalType: 'timestamp-millis' }, doc: 'dropped' },
      { name: 'o', type: ['null', 'string'], default: null },
    ],
  });
  assert.equal(parsingCanonicalForm(type), '{"name":"org.x.R","type":"record","fields":[{"name":"at","type":"long"},{"name":"o","type":["null","string"]}]}');
});

test('a NoteEvent single-object encoded by Java is read without any header, and cuilink writes the same bytes for it', async () => {
  const codec = new PlainAvroCodec();
  const decoded = await codec.decode('NoteEvent', JAVA_NOTE_EVENT);
  assert.deepEqual(noteEventToNoteInput(decoded), JAVA_NOTE);
  assert.deepEqual((await codec.encode('NoteEvent', decoded)).value, JAVA_NOTE_EVENT);
});

test('the Confluent-mode codec reads single-object records too (its magic byte 0 never starts one)', async () => {
  const codec = new ConfluentAvroCodec({ url: 'http://127.0.0.1:9' });
  assert.equal((await codec.decode('NoteEvent', JAVA_NOTE_EVENT, {})).noteId, 'java-1');
});

test('no record of the deprecated format starts with C3 01: every shipped schema starts with a string or a union', () => {
  // C3 01 is the zig-zag varint -98: a negative string length or union branch, never valid there.
  // (It would be a valid int/long, or an array/map block count.) Schema changes only append fields.
  const schemas = knownSchemas();
  for (const kind of Object.keys(RECORD_KINDS) as RecordKind[]) {
    for (const s of schemas.all(kind)) {
      const first = (s.type as avro.types.RecordType).fields[0]!.type;
      assert.ok(['string', 'union:unwrapped', 'union:wrapped', 'bytes', 'enum'].includes(first.typeName), `${s.file}: first field is ${first.typeName}`);
      assert.throws(() => s.type.fromBuffer(Buffer.concat([Buffer.from([0xc3, 0x01]), Buffer.alloc(200)])), `${s.file}: C3 01 is not a valid start`);
    }
  }
});

test('single-object fuzz: mutated single-object NoteEvents (fixed seed) end in a coded rejection or a note', () => {
  const codec = new PlainAvroCodec();
  const random = seededRandom(20260128);
  const allowed = new Set(['UNDECODABLE', 'UNKNOWN_SCHEMA', 'NOTE_TOO_LARGE', 'BAD_TEXT_ENCODING']);
  const codes = new Map<string, number>();
  for (let i = 0; i < 2000; i++) {
    const bytes = [...JAVA_NOTE_EVENT];
    const edits = 1 + Math.floor(random() * 3);
    for (let e = 0; e < edits; e++) {
      // Half the edits land in the 10-byte header.
      const at = random() < 0.5 ? Math.floor(random() * 10) : Math.floor(random() * bytes.length);
      const op = random();
      if (op < 0.6) bytes[at] = Math.floor(random() * 256);
      else if (op < 0.8) bytes.splice(at, 1);
      else bytes.length = at;
    }
    let code = 'OK';
    try {
      codec.decodeSync('NoteEvent', Buffer.from(bytes), {}, { maxArrayItems: 10, maxStringBytes: 1000, code: 'NOTE_TOO_LARGE' });
    } catch (error) {
      assert.ok(error instanceof CuilinkError && allowed.has(error.code), `a coded rejection, got ${String(error)}`);
      code = error.code;
    }
    codes.set(code, (codes.get(code) ?? 0) + 1);
  }
  for (const code of ['OK', 'UNDECODABLE', 'UNKNOWN_SCHEMA']) assert.ok((codes.get(code) ?? 0) > 0, `some ${code}: ${JSON.stringify([...codes])}`);
});
