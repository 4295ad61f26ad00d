import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LinkedNote, NoteInput } from '../../../src/link/types.ts';
import type { GoldMention } from '../../../src/eval/gold.ts';
import { avroToGoldMention, goldMentionToAvro } from '../../../src/eval/gold-avro.ts';
import {
  avroToHeaders,
  avroToLinkedNote,
  headersToAvro,
  knownSchemas,
  linkedNoteToAvro,
  noteEventToNoteInput,
  noteInputToNoteEvent,
  PlainAvroCodec,
  SCHEMA_FINGERPRINT_HEADER,
  SCHEMA_NAME_HEADER,
  type DeadLetterRecord,
} from '../../../src/stream/avro/index.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';

const note: NoteInput = {
  noteId: 'n-1',
  text: 'Patient with ataxia-telangiectasia (A-T).',
  mentions: [
    { id: '13-33', start: 13, end: 33, text: 'ataxia-telangiectasia', label: 'Disease', score: 0.97 },
    { id: '35-38', start: 35, end: 38, text: 'A-T', label: 'Disease' },
  ],
  source: 'ehr',
  timestamp: 1_700_000_000_123,
  nerModelVersion: 'ner-2',
};

const linked: LinkedNote = {
  noteId: 'n-1',
  mentions: [
    {
      mentionId: '13-33',
      start: 13,
      end: 33,
      label: 'Disease',
      conceptId: 'MESH:D001260',
      conceptName: 'Ataxia Telangiectasia',
      semanticTypes: ['T047'],
      score: 0.91,
      confidence: 0.93,
      via: 'memory',
      inKb: 0.97,
      nil: false,
      reranked: true,
      candidates: [
        { conceptId: 'MESH:D001260', name: 'Ataxia Telangiectasia', semanticTypes: ['T047'], score: 0.91, retrievalScore: 0.83, exact: true, via: 'exact' },
        { conceptId: 'MESH:D001259', name: 'Ataxia', semanticTypes: [], score: 0.2, retrievalScore: 0.61, exact: false, via: 'dense' },
      ],
      expandedFrom: null,
      memoryDecided: true,
      memorySupport: 3,
    },
    { mentionId: '35-38', start: 35, end: 38, label: 'Disease', conceptId: null, conceptName: null, semanticTypes: [], score: 0.1, confidence: null, via: null, inKb: null, nil: true, reranked: false, candidates: [], expandedFrom: 'A-T', memoryDecided: false, memorySupport: 0 },
  ],
  linkerVersion: 'cuilink-0.1.0',
  modelVersion: 'm1',
  indexVersion: 'i1',
  memoryVersion: '000003-abcdef0123',
  linkedAt: 1_700_000_000_999,
};

/** avsc reads records as instances of generated classes; compare their fields only. */
function plain(value: unknown): unknown {
  if (Buffer.isBuffer(value) || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(plain);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
}

async function assertCode(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof CuilinkError, `expected CuilinkError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.equal(error.retriable, false);
    return true;
  });
}

test('NoteEvent round trip: NoteInput → Avro single-object bytes (C3 01, CRC-64-AVRO fingerprint, body) and a name header → the same NoteInput', async () => {
  const codec = new PlainAvroCodec();
  const encoded = await codec.encode('NoteEvent', noteInputToNoteEvent(note));
  const current = knownSchemas().current('NoteEvent');
  assert.equal(encoded.value.subarray(0, 10).toString('hex'), 'c301' + '7c20aeb1aea1bad3', 'marker + the current NoteEvent fingerprint, little-endian');
  assert.deepEqual(encoded.value.subarray(10), current.type.toBuffer(noteInputToNoteEvent(note)), 'then the plain Avro binary');
  assert.equal(encoded.headers[SCHEMA_FINGERPRINT_HEADER], undefined, 'the deprecated fingerprint header is no longer written');
  assert.equal(encoded.headers[SCHEMA_NAME_HEADER], 'org.cuilink.NoteEvent');
  const decoded = noteEventToNoteInput(await codec.decode('NoteEvent', encoded.value, encoded.headers));
  assert.deepEqual(decoded, { ...note, mentions: [note.mentions[0], { ...note.mentions[1], score: null }] });
  assert.deepEqual(noteEventToNoteInput(await codec.decode('NoteEvent', encoded.value)), decoded, 'no header needed');
});

test('a NoteInput without a timestamp is stamped with the given time; the deprecated header format, its header as a Buffer, still decodes', async () => {
  const codec = new PlainAvroCodec();
  const record = noteInputToNoteEvent({ noteId: 'x', text: 't', mentions: [] }, 42);
  const current = knownSchemas().current('NoteEvent');
  const headers = { [SCHEMA_FINGERPRINT_HEADER]: Buffer.from(current.fingerprint) };
  const decoded = await codec.decode('NoteEvent', current.type.toBuffer(record), headers);
  assert.deepEqual(plain(decoded), { noteId: 'x', text: 't', mentions: [], source: null, timestamp: 42, nerModelVersion: null });
  assert.deepEqual(plain(await codec.decode('NoteEvent', (await codec.encode('NoteEvent', record)).value)), plain(decoded));
});

test('LinkedNote round trip keeps every field, nil mentions and candidate order', async () => {
  const codec = new PlainAvroCodec();
  const encoded = await codec.encode('LinkedNote', linkedNoteToAvro(linked));
  assert.deepEqual(avroToLinkedNote(await codec.decode('LinkedNote', encoded.value, encoded.headers)), linked);
});

test('GoldMention round trip, with annotator provenance', async () => {
  const codec = new PlainAvroCodec();
  const gold: GoldMention = { noteId: 'n-1', mentionId: '13-33', ids: ['MESH:D001260', 'OMIM:208900'], label: 'Disease', start: 13, end: 33 };
  const record = goldMentionToAvro(gold, { annotator: 'coder-7', annotatedAt: 5 });
  const encoded = await codec.encode('GoldMention', record);
  const decoded = await codec.decode('GoldMention', encoded.value, encoded.headers);
  assert.deepEqual(plain(decoded), record);
  assert.deepEqual(avroToGoldMention(decoded), gold);
});

test('DeadLetter round trip keeps the original bytes and repeated headers in order', async () => {
  const codec = new PlainAvroCodec();
  const headers = { traceparent: '00-abc-def-01', multi: [Buffer.from('a'), 'b'], [SCHEMA_FINGERPRINT_HEADER]: 'ff' };
  const record: DeadLetterRecord = {
    originalKey: Buffer.from('n-9'),
    original: Buffer.from([0xde, 0xad, 0xbe, 0xef]),
    originalHeaders: headersToAvro(headers),
    errorCode: 'UNDECODABLE',
    reason: 'truncated buffer',
    sourceTopic: 'notes',
    partition: 3,
    offset: 9_007_199_254,
    stage: 'decode',
    failedAt: 77,
    originalTruncated: false,
    originalSha256: 'a'.repeat(64),
    originalSize: 4,
  };
  const encoded = await codec.encode('DeadLetter', record);
  const decoded = await codec.decode('DeadLetter', encoded.value, encoded.headers);
  assert.deepEqual(plain(decoded), record);
  assert.deepEqual(
    decoded.originalHeaders.map((h) => [h.key, h.value?.toString()]),
    [
      ['traceparent', '00-abc-def-01'],
      ['multi', 'a'],
      ['multi', 'b'],
      [SCHEMA_FINGERPRINT_HEADER, 'ff'],
    ],
  );
  assert.deepEqual(avroToHeaders(decoded.originalHeaders).multi, [Buffer.from('a'), Buffer.from('b')]);
  const odd = avroToHeaders([{ key: 'constructor', value: Buffer.from('c') }, { key: '__proto__', value: Buffer.from('p') }]);
  assert.deepEqual(Object.entries(odd).map(([k, v]) => `${k}=${String(v)}`), ['constructor=c', '__proto__=p']);
});

test('evolution: a NoteEvent written with the v1 schema (no nerModelVersion) is read by the current reader with the default', async () => {
  const schemas = knownSchemas();
  const v1 = schemas.all('NoteEvent').find((s) => !s.current);
  assert.ok(v1 !== undefined, 'schemas/history holds an older NoteEvent');
  assert.match(v1.file, /history[/\\]note-event\.v1\.avsc$/);
  assert.notEqual(v1.fingerprint, schemas.current('NoteEvent').fingerprint);
  const { nerModelVersion: _dropped, ...v1Record } = noteInputToNoteEvent(note);
  const bytes = v1.type.toBuffer(v1Record);
  // The current reader alone cannot read v1 bytes: resolution is what makes this work.
  assert.throws(() => schemas.current('NoteEvent').type.fromBuffer(bytes));
  const decoded = await new PlainAvroCodec().decode('NoteEvent', bytes, { [SCHEMA_FINGERPRINT_HEADER]: v1.fingerprint });
  assert.equal(decoded.nerModelVersion, null);
  assert.deepEqual(plain(decoded), { ...noteInputToNoteEvent(note), nerModelVersion: null });
  // The same in single-object encoding: the v1 fingerprint (13b952f7a3f4a7cc) picks the v1 writer schema.
  assert.equal(v1.singleObjectFingerprint.toString('hex'), '13b952f7a3f4a7cc');
  const singleObject = Buffer.concat([Buffer.from([0xc3, 0x01]), v1.singleObjectFingerprint, bytes]);
  assert.deepEqual(plain(await new PlainAvroCodec().decode('NoteEvent', singleObject)), plain(decoded));
});

test('evolution: a LinkedNote written with the v1 schema (no memory fields) is read with memoryDecided false, support 0, memoryVersion null', async () => {
  const schemas = knownSchemas();
  const v1 = schemas.all('LinkedNote').find((s) => !s.current);
  assert.ok(v1 !== undefined, 'schemas/history holds an older LinkedNote');
  assert.match(v1.file, /history[/\\]linked-note\.v1\.avsc$/);
  const current = linkedNoteToAvro(linked);
  const { memoryVersion: _version, ...v1Record } = { ...current, mentions: current.mentions.map(({ memoryDecided: _d, memorySupport: _s, ...m }) => m) };
  const bytes = v1.type.toBuffer(v1Record);
  assert.throws(() => schemas.current('LinkedNote').type.fromBuffer(bytes));
  const decoded = avroToLinkedNote(await new PlainAvroCodec().decode('LinkedNote', bytes, { [SCHEMA_FINGERPRINT_HEADER]: v1.fingerprint }));
  assert.deepEqual(avroToLinkedNote(await new PlainAvroCodec().decode('LinkedNote', Buffer.concat([Buffer.from('c301', 'hex'), v1.singleObjectFingerprint, bytes]))), decoded, 'single-object v1');
  assert.equal(decoded.memoryVersion, null);
  assert.deepEqual(decoded.mentions.map((m) => [m.memoryDecided, m.memorySupport]), [[false, 0], [false, 0]]);
  assert.deepEqual(decoded, { ...linked, memoryVersion: null, mentions: linked.mentions.map((m) => ({ ...m, confidence: null, via: null, inKb: null, memoryDecided: false, memorySupport: 0, candidates: m.candidates.map((c) => ({ ...c, via: 'unknown' })) })) });
});

test('evolution: a LinkedNote written with the v2 schema (no confidence, no via) is read with confidence null, via null and candidates via unknown', async () => {
  const schemas = knownSchemas();
  const v2 = schemas.all('LinkedNote').find((s) => /linked-note\.v2\.avsc$/.test(s.file));
  assert.ok(v2 !== undefined, 'schemas/history holds LinkedNote v2');
  const current = linkedNoteToAvro(linked);
  const v2Record = { ...current, mentions: current.mentions.map(({ confidence: _c, via: _v, inKb: _k, ...m }) => ({ ...m, candidates: m.candidates.map(({ via: _cv, ...c }) => c) })) };
  const bytes = v2.type.toBuffer(v2Record);
  assert.throws(() => schemas.current('LinkedNote').type.fromBuffer(bytes), 'the current schema is not v2 on the wire');
  const decoded = avroToLinkedNote(await new PlainAvroCodec().decode('LinkedNote', bytes, { [SCHEMA_FINGERPRINT_HEADER]: v2.fingerprint }));
  assert.deepEqual(avroToLinkedNote(await new PlainAvroCodec().decode('LinkedNote', Buffer.concat([Buffer.from('c301', 'hex'), v2.singleObjectFingerprint, bytes]))), decoded, 'single-object v2');
  assert.deepEqual(decoded.mentions.map((m) => [m.confidence, m.via]), [[null, null], [null, null]]);
  assert.deepEqual(decoded.mentions[0]!.candidates.map((c) => c.via), ['unknown', 'unknown']);
  assert.equal(decoded.mentions[0]!.memoryDecided, true, 'v2 fields survive');
  const roundTrip = avroToLinkedNote(await new PlainAvroCodec().decode('LinkedNote', (await new PlainAvroCodec().encode('LinkedNote', current)).value));
  assert.deepEqual([roundTrip.mentions[0]!.confidence, roundTrip.mentions[0]!.via, roundTrip.mentions[0]!.candidates[0]!.via], [0.93, 'memory', 'exact'], 'v3 carries confidence and provenance');
});

test('evolution: a LinkedNote written with the v3 schema (no inKb) is read with inKb null, everything else kept', async () => {
  const schemas = knownSchemas();
  const v3 = schemas.all('LinkedNote').find((s) => /linked-note\.v3\.avsc$/.test(s.file));
  assert.ok(v3 !== undefined, 'schemas/history holds LinkedNote v3');
  const current = linkedNoteToAvro(linked);
  const v3Record = { ...current, mentions: current.mentions.map(({ inKb: _k, ...m }) => m) };
  const bytes = v3.type.toBuffer(v3Record);
  assert.throws(() => schemas.current('LinkedNote').type.fromBuffer(bytes), 'the current schema is not v3 on the wire');
  const decoded = avroToLinkedNote(await new PlainAvroCodec().decode('LinkedNote', bytes, { [SCHEMA_FINGERPRINT_HEADER]: v3.fingerprint }));
  assert.deepEqual(avroToLinkedNote(await new PlainAvroCodec().decode('LinkedNote', Buffer.concat([Buffer.from('c301', 'hex'), v3.singleObjectFingerprint, bytes]))), decoded, 'single-object v3');
  assert.deepEqual(decoded, { ...linked, mentions: linked.mentions.map((m) => ({ ...m, inKb: null })) });
  const roundTrip = avroToLinkedNote(await new PlainAvroCodec().decode('LinkedNote', (await new PlainAvroCodec().encode('LinkedNote', current)).value));
  assert.deepEqual(roundTrip.mentions.map((m) => m.inKb), [0.97, null], 'v4 carries P(in KB)');
});

test('bad input: empty value, garbage, truncated and trailing bytes are UNDECODABLE, in both plain formats', async () => {
  const codec = new PlainAvroCodec();
  const current = knownSchemas().current('NoteEvent');
  const headers = { [SCHEMA_FINGERPRINT_HEADER]: current.fingerprint };
  const body = current.type.toBuffer(noteInputToNoteEvent(note));
  const good = (await codec.encode('NoteEvent', noteInputToNoteEvent(note))).value;
  for (const h of [headers, {}]) {
    await assertCode(codec.decode('NoteEvent', null, h), 'UNDECODABLE');
    await assertCode(codec.decode('NoteEvent', Buffer.alloc(0), h), 'UNDECODABLE');
  }
  // Deprecated format: the body with the fingerprint header.
  await assertCode(codec.decode('NoteEvent', Buffer.from('{"noteId":"json, not avro"}'), headers), 'UNDECODABLE');
  await assertCode(codec.decode('NoteEvent', body.subarray(0, body.length - 5), headers), 'UNDECODABLE');
  await assertCode(codec.decode('NoteEvent', Buffer.concat([body, Buffer.from([1, 2])]), headers), 'UNDECODABLE');
  // Single-object: a header cut short, a header with no body, a truncated body, trailing bytes.
  await assertCode(codec.decode('NoteEvent', Buffer.from([0xc3, 0x01])), 'UNDECODABLE');
  await assertCode(codec.decode('NoteEvent', good.subarray(0, 9)), 'UNDECODABLE');
  await assertCode(codec.decode('NoteEvent', good.subarray(0, 10)), 'UNDECODABLE');
  await assertCode(codec.decode('NoteEvent', good.subarray(0, good.length - 5)), 'UNDECODABLE');
  await assertCode(codec.decode('NoteEvent', Buffer.concat([good, Buffer.from([1, 2])])), 'UNDECODABLE');
  await assertCode(codec.decode('NoteEvent', Buffer.concat([good.subarray(0, 10), Buffer.from('{"noteId":"json, not avro"}')])), 'UNDECODABLE');
});

test('bad input: a missing or unknown fingerprint, a header naming another schema than the value, and a record of another kind are UNKNOWN_SCHEMA', async () => {
  const codec = new PlainAvroCodec();
  const current = knownSchemas().current('NoteEvent');
  const good = await codec.encode('NoteEvent', noteInputToNoteEvent(note));
  const body = good.value.subarray(10);
  // Neither the single-object marker nor the deprecated header.
  await assertCode(codec.decode('NoteEvent', body, {}), 'UNKNOWN_SCHEMA');
  await assertCode(codec.decode('NoteEvent', body, { [SCHEMA_FINGERPRINT_HEADER]: '0'.repeat(64) }), 'UNKNOWN_SCHEMA');
  // A single-object fingerprint no shipped schema has.
  await assertCode(codec.decode('NoteEvent', Buffer.concat([Buffer.from('c301', 'hex'), Buffer.alloc(8, 0xff), body])), 'UNKNOWN_SCHEMA');
  // Both, disagreeing: refused, not guessed.
  await assertCode(codec.decode('NoteEvent', good.value, { [SCHEMA_FINGERPRINT_HEADER]: 'f'.repeat(64) }), 'UNKNOWN_SCHEMA');
  assert.equal((await codec.decode('NoteEvent', good.value, { [SCHEMA_FINGERPRINT_HEADER]: current.fingerprint.toUpperCase() })).noteId, note.noteId, 'both, agreeing: read');
  const linkedBytes = await codec.encode('LinkedNote', linkedNoteToAvro(linked));
  await assertCode(codec.decode('NoteEvent', linkedBytes.value, linkedBytes.headers), 'UNKNOWN_SCHEMA');
  const linkedSchema = knownSchemas().current('LinkedNote');
  await assertCode(codec.decode('NoteEvent', linkedSchema.type.toBuffer(linkedNoteToAvro(linked)), { [SCHEMA_FINGERPRINT_HEADER]: linkedSchema.fingerprint }), 'UNKNOWN_SCHEMA');
});

test('encoding an invalid record fails with INVALID_RECORD naming the field, never its (PHI) value', async () => {
  const codec = new PlainAvroCodec();
  const bad = { ...noteInputToNoteEvent(note), mentions: [{ ...noteInputToNoteEvent(note).mentions[0]!, start: 'secret text' as unknown as number }] };
  await assert.rejects(codec.encode('NoteEvent', bad), (error: unknown) => {
    assert.ok(error instanceof CuilinkError);
    assert.equal(error.code, 'INVALID_RECORD');
    assert.match(error.message, /mentions\.0\.start = string/);
    assert.doesNotMatch(error.message, /secret/);
    return true;
  });
});
