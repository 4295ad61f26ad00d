import { test } from 'node:test';
import assert from 'node:assert/strict';
import avro from 'avsc';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { checkAvroBounds } from '../../../src/stream/avro/avro-bounds.ts';
import { ConfluentAvroCodec, knownSchemas, noteInputToNoteEvent, PlainAvroCodec, SCHEMA_FINGERPRINT_HEADER } from '../../../src/stream/avro/index.ts';
import { decodeInputRecord } from '../../../src/stream/input-record.ts';
import { AvroStageCodec } from '../../../src/stream/avro/avro-stage-codec.ts';
import { startSchemaRegistryStandIn } from '../../support/schema-registry-stand-in.ts';
import type { InboundRecord } from '../../../src/stream/kafka/client-types.ts';
import { seededRandom } from '../../../src/eval/seeded-random.ts';

const schemas = knownSchemas();
const noteType = schemas.current('NoteEvent').type;
const FINGERPRINT = { [SCHEMA_FINGERPRINT_HEADER]: schemas.current('NoteEvent').fingerprint };
const LIMITS = { maxNoteChars: 2000, maxMentions: 10, maxMentionChars: 512 };
const DECODE_LIMITS = { maxArrayItems: LIMITS.maxMentions, maxStringBytes: LIMITS.maxNoteChars * 3, code: 'NOTE_TOO_LARGE' };

const validNote = noteInputToNoteEvent(
  {
    noteId: 'n-1',
    text: 'Patient with seizures and hypotonia; fever.',
    mentions: [
      { id: 'm1', start: 13, end: 21, text: 'seizures', label: 'Phenotype', score: 0.9 },
      { id: 'm2', start: 26, end: 35, text: 'hypotonia', label: 'Phenotype' },
    ],
    source: 'ehr',
    nerModelVersion: 'v1',
  },
  1_700_000_000_000,
);
const validBytes = noteType.toBuffer(validNote);

/** An input record as the consumer hands it over: every header value a Buffer. */
function message(value: Buffer, headers: Record<string, string> = FINGERPRINT): InboundRecord {
  const bytes = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(v)]));
  return { topic: 'notes', partition: 0, offset: '0', timestamp: '0', key: Buffer.from('k'), value, headers: bytes };
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    assert.ok(error instanceof CuilinkError, `a CuilinkError, got ${String(error)}`);
    return error.code;
  }
}

test('the 9-byte record claiming 2^31-1 mentions is rejected at once, before avsc allocates', async () => {
  const poison = Buffer.from('02780279feffffff0f', 'hex');
  const started = performance.now();
  const outcome = await decodeInputRecord(new AvroStageCodec(new PlainAvroCodec()), message(poison), LIMITS);
  assert.equal(outcome.kind, 'rejected');
  assert.equal(outcome.kind === 'rejected' && outcome.error.code, 'NOTE_TOO_LARGE', 'more mentions than maxMentionsPerNote');
  // Without the mention limit the count is still checked against the bytes left.
  assert.equal(codeOf(() => checkAvroBounds(noteType, poison, 'NoteEvent')), 'UNDECODABLE');
  assert.ok(performance.now() - started < 1000, 'no loop over the claimed items');
});

test('length prefixes and counts beyond the bytes left or the limits are UNDECODABLE / NOTE_TOO_LARGE', () => {
  const zz = (n: number) => avro.Type.forSchema('long').toBuffer(n);
  // noteId claims 10^9 bytes.
  assert.equal(codeOf(() => checkAvroBounds(noteType, Buffer.concat([zz(1e9), Buffer.from('ab')]), 'NoteEvent')), 'UNDECODABLE');
  // A text longer than the limit (in bytes) is too large even when the bytes are there.
  const big = noteType.toBuffer({ ...validNote, text: 'x'.repeat(7000), mentions: [] });
  assert.equal(codeOf(() => checkAvroBounds(noteType, big, 'NoteEvent', DECODE_LIMITS)), 'NOTE_TOO_LARGE');
  // 11 mentions with the limit at 10.
  const many = noteType.toBuffer({ ...validNote, mentions: Array.from({ length: 11 }, (_, i) => ({ ...validNote.mentions[0]!, id: `m${i}` })) });
  assert.equal(codeOf(() => checkAvroBounds(noteType, many, 'NoteEvent', DECODE_LIMITS)), 'NOTE_TOO_LARGE');
  // Negative block counts with a block size beyond the end; a varint that never ends; trailing bytes.
  const head = Buffer.concat([zz(1), Buffer.from('a'), zz(1), Buffer.from('b')]);
  assert.equal(codeOf(() => checkAvroBounds(noteType, Buffer.concat([head, zz(-2), zz(1e6)]), 'NoteEvent')), 'UNDECODABLE');
  assert.equal(codeOf(() => checkAvroBounds(noteType, Buffer.concat([head, Buffer.alloc(12, 0xff)]), 'NoteEvent')), 'UNDECODABLE');
  assert.equal(codeOf(() => checkAvroBounds(noteType, Buffer.concat([validBytes, Buffer.from([0])]), 'NoteEvent')), 'UNDECODABLE');
  // A valid record passes, and is what avsc reads.
  assert.equal(codeOf(() => checkAvroBounds(noteType, validBytes, 'NoteEvent', DECODE_LIMITS)), undefined);
});

test('a recursive writer schema (an evolved NoteEvent in a registry) nested 10,000 deep is NOTE_TOO_LARGE, not a stack overflow', async () => {
  // Adding an optional `previous: NoteEvent` is a compatible evolution a registry accepts; the
  // walk of such a record used to recurse once per level and threw RangeError (the stage stopped).
  const raw = schemas.current('NoteEvent').raw as { fields: unknown[] };
  const evolved = avro.Type.forSchema({ ...raw, fields: [...raw.fields, { name: 'previous', type: ['null', 'org.cuilink.NoteEvent'], default: null }] } as avro.Schema);
  type Nested = typeof validNote & { previous: Nested | null };
  const nested = (depth: number): Nested => {
    let note: Nested = { ...validNote, mentions: [], previous: null };
    for (let i = 1; i < depth; i++) note = { ...validNote, mentions: [], previous: note };
    return note;
  };
  const deep = Buffer.concat(Array.from({ length: 10_000 }, (_, i) => Buffer.concat([noteType.toBuffer({ ...validNote, mentions: [] }), Buffer.from([i === 9_999 ? 0 : 2])])));
  assert.equal(codeOf(() => checkAvroBounds(evolved, deep, 'NoteEvent', DECODE_LIMITS)), 'NOTE_TOO_LARGE');
  assert.equal(codeOf(() => checkAvroBounds(evolved, deep, 'NoteEvent')), 'RECORD_TOO_LARGE');
  // A few levels are read as the current NoteEvent reads them (the writer's extra field skipped).
  assert.equal(codeOf(() => checkAvroBounds(evolved, evolved.toBuffer(nested(3)), 'NoteEvent', DECODE_LIMITS)), undefined);
});

test('invalid UTF-8 and lone surrogates in a string are BAD_TEXT_ENCODING', async () => {
  const codec = new AvroStageCodec(new PlainAvroCodec());
  // Build the records from parts: noteId, text (raw bytes), empty mentions, null source, timestamp, null version.
  const record = (text: Buffer) => Buffer.concat([avro.Type.forSchema('string').toBuffer('n-2'), avro.Type.forSchema('long').toBuffer(text.length), text, Buffer.from([0, 0]), avro.Type.forSchema('long').toBuffer(1), Buffer.from([0])]);
  assert.equal(codeOf(() => checkAvroBounds(noteType, record(Buffer.from('fine')), 'NoteEvent')), undefined);
  for (const bad of [Buffer.from([0x66, 0xff, 0x66]), Buffer.from([0xed, 0xa0, 0x80]) /* U+D800, a lone surrogate, CESU-style */, Buffer.from([0xc3])]) {
    const outcome = await decodeInputRecord(codec, message(record(bad)), LIMITS);
    assert.equal(outcome.kind === 'rejected' && outcome.error.code, 'BAD_TEXT_ENCODING');
  }
});


const ALLOWED = new Set(['UNDECODABLE', 'NOTE_TOO_LARGE', 'BAD_TEXT_ENCODING', 'UNKNOWN_SCHEMA', 'EMPTY_RECORD', 'BAD_NOTE', 'EMPTY_NOTE', 'BAD_MENTION', 'BAD_SPAN', 'SPAN_TEXT_MISMATCH']);
const FUZZ_CASES = 3000;
const FUZZ_BUDGET_MS = 20_000;

/** Random bytes, mutations of a valid record (flipped, inserted, deleted, truncated bytes) and crafted length prefixes. */
function fuzzInputs(random: () => number, count: number): Buffer[] {
  const inputs: Buffer[] = [];
  const zz = (n: number) => avro.Type.forSchema('long').toBuffer(n);
  const huge = [2 ** 31 - 1, 2 ** 40, 1e6, 1e7, -(2 ** 31), 65_536, 1001];
  for (let i = 0; i < count; i++) {
    const kind = i % 4;
    if (kind === 0) {
      inputs.push(Buffer.from(Array.from({ length: 1 + Math.floor(random() * 64) }, () => Math.floor(random() * 256))));
    } else if (kind === 1 || kind === 2) {
      const bytes = [...validBytes];
      const edits = 1 + Math.floor(random() * 4);
      for (let e = 0; e < edits; e++) {
        const at = Math.floor(random() * bytes.length);
        const op = random();
        if (op < 0.5) bytes[at] = Math.floor(random() * 256);
        else if (op < 0.7) bytes.splice(at, 0, Math.floor(random() * 256));
        else if (op < 0.85) bytes.splice(at, 1);
        else bytes.length = at;
      }
      inputs.push(Buffer.from(bytes.length > 0 ? bytes : [0]));
    } else {
      // A crafted length prefix or count at a field boundary of a valid record.
      const n = huge[Math.floor(random() * huge.length)]!;
      const parts = [zz(3), Buffer.from('n-1'), zz(2), Buffer.from('ab')];
      const cut = Math.floor(random() * 3);
      const prefix = cut === 0 ? [] : cut === 1 ? parts.slice(0, 2) : parts;
      inputs.push(Buffer.concat([...prefix, zz(n), Buffer.from(Array.from({ length: Math.floor(random() * 16) }, () => Math.floor(random() * 256)))]));
    }
  }
  return inputs;
}

test(`decoder fuzz: ${FUZZ_CASES} random, mutated and crafted NoteEvent values (fixed seed) never throw anything but a coded rejection, never hang`, async () => {
  const random = seededRandom(20261123);
  const codec = new AvroStageCodec(new PlainAvroCodec());
  const inputs = fuzzInputs(random, FUZZ_CASES);
  const started = performance.now();
  const codes = new Map<string, number>();
  let slowest = 0;
  for (const input of inputs) {
    const t0 = performance.now();
    const outcome = await decodeInputRecord(codec, message(input), LIMITS);
    slowest = Math.max(slowest, performance.now() - t0);
    const code = outcome.kind === 'rejected' ? outcome.error.code : 'OK';
    codes.set(code, (codes.get(code) ?? 0) + 1);
    if (outcome.kind === 'rejected') assert.ok(ALLOWED.has(code), `unexpected code ${code}`);
    if (performance.now() - started > FUZZ_BUDGET_MS) assert.fail(`fuzz budget of ${FUZZ_BUDGET_MS} ms exceeded`);
  }
  assert.ok(slowest < 1000, `no single input takes a second (slowest ${slowest.toFixed(1)} ms)`);
  assert.ok((codes.get('UNDECODABLE') ?? 0) > FUZZ_CASES / 4, JSON.stringify([...codes]));
  assert.ok((codes.get('NOTE_TOO_LARGE') ?? 0) > 0, 'crafted counts hit the mention limit');
});

test('decoder fuzz, Confluent wire format: the same crafted values behind a magic byte and a registered id', async () => {
  const registry = await startSchemaRegistryStandIn();
  try {
    const id = registry.register('org.cuilink.NoteEvent', JSON.stringify(schemas.current('NoteEvent').raw));
    const codec = new AvroStageCodec(new ConfluentAvroCodec({ url: registry.url }));
    const header = Buffer.alloc(5);
    header.writeInt32BE(id, 1);
    const poison = await decodeInputRecord(codec, message(Buffer.concat([header, Buffer.from('02780279feffffff0f', 'hex')]), {}), LIMITS);
    assert.equal(poison.kind === 'rejected' && poison.error.code, 'NOTE_TOO_LARGE');
    const random = seededRandom(7);
    for (const input of fuzzInputs(random, 400)) {
      const outcome = await decodeInputRecord(codec, message(Buffer.concat([header, input]), {}), LIMITS);
      if (outcome.kind === 'rejected') assert.ok(ALLOWED.has(outcome.error.code), outcome.error.code);
    }
    const good = await decodeInputRecord(codec, message(Buffer.concat([header, validBytes]), {}), LIMITS);
    assert.equal(good.kind, 'note');
  } finally {
    await registry.close();
  }
});
