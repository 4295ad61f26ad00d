import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { DeadLetterRecord } from '../../../src/stream/avro/avro-records.ts';
import { RECORD_FAULT_CODES } from '../../../src/stream/dead-letter-policy.ts';
import {
  keyText,
  matchesFilter,
  NEVER_REPLAY,
  REPLAYABLE_AFTER_FIX,
  REPLAYED_FROM_HEADER,
  replayMessage,
  replayVerdict,
  selectDeadLetters,
  viewLine,
  viewOf,
  type DeadLetterEntry,
} from '../../../src/stream/dead-letter-replay.ts';
import { parseCodes, parseFilterFlags, parseOffsets, parseTime } from '../../../src/cli/commands/dlq.ts';
import { SCHEMA_FINGERPRINT_HEADER } from '../../../src/stream/avro/record-codec.ts';
import { knownSchemas } from '../../../src/stream/avro/avro-schemas.ts';
import { PlainAvroCodec } from '../../../src/stream/avro/plain-avro-codec.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';

const NOTE_TEXT = 'Patient PHIMARKER reports seizures.';
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function letter(overrides: Partial<DeadLetterRecord> = {}): DeadLetterRecord {
  const original = Buffer.from(NOTE_TEXT);
  return {
    originalKey: Buffer.from('note-1'),
    original,
    originalHeaders: [{ key: 'x-origin', value: Buffer.from('test') }],
    errorCode: 'NOTE_TOO_LARGE',
    reason: 'note note-1: 35 characters exceeds the limit of 10',
    sourceTopic: 'notes',
    partition: 1,
    offset: 42,
    stage: 'validate',
    failedAt: Date.parse('2025-03-01T10:00:00Z'),
    originalTruncated: false,
    originalSha256: sha(original),
    originalSize: original.length,
    ...overrides,
  };
}

const entry = (offset: number, l: DeadLetterRecord | undefined, partition = 0): DeadLetterEntry => ({ topic: 'dead', partition, offset: String(offset), ...(l === undefined ? { unreadable: 'UNKNOWN_SCHEMA: no schema' } : { letter: l }) });

test('every record-fault code is either never replayed or replayable after a fix, not both; the docs table lists each', () => {
  const never = [...NEVER_REPLAY.keys()];
  const after = [...REPLAYABLE_AFTER_FIX.keys()];
  assert.deepEqual([...never, ...after].sort(), [...RECORD_FAULT_CODES].sort());
  assert.equal(never.filter((c) => after.includes(c)).length, 0);
  const doc = readFileSync('docs/dead-letters.md', 'utf8');
  for (const code of never) assert.match(doc, new RegExp(`\\| \`${code}\` \\| never `), `${code} in the never-replay table`);
  for (const code of after) assert.match(doc, new RegExp(`\\| \`${code}\` \\| after a fix `), `${code} in the never-replay table`);
});

test('replay verdicts: cut originals, never-codes, unknown codes, damaged originals, repeated headers and non-dead-letters are skipped', () => {
  assert.deepEqual(replayVerdict(entry(0, letter())), { replayable: true });
  assert.equal(replayVerdict(entry(0, letter({ errorCode: 'OUTPUT_TOO_LARGE' }))).replayable, true);
  const skip = (l: DeadLetterRecord | undefined) => {
    const v = replayVerdict(entry(0, l));
    return v.replayable ? 'yes' : v.skip;
  };
  // A cut original is never replayed, whatever its code.
  assert.equal(skip(letter({ originalTruncated: true, original: Buffer.from(NOTE_TEXT.slice(0, 5)), originalSize: 5000 })), 'cut');
  for (const code of NEVER_REPLAY.keys()) assert.equal(skip(letter({ errorCode: code })), 'never', code);
  assert.equal(skip(letter({ errorCode: 'LINK_FAILED' })), 'unknown-code');
  assert.equal(skip(letter({ originalSha256: 'a'.repeat(64) })), 'sha256-mismatch');
  assert.equal(skip(letter({ originalHeaders: [{ key: 'a', value: null }, { key: 'a', value: Buffer.from('x') }] })), 'repeated-header');
  assert.equal(skip(letter({ originalHeaders: [{ key: REPLAYED_FROM_HEADER, value: Buffer.from('dead/0/1') }, { key: 'a', value: null }] })), 'yes', 'an earlier replay header is replaced, not repeated');
  assert.equal(skip(undefined), 'not-a-dead-letter');
  // v1 dead letters (no sha256) are replayable.
  assert.equal(skip(letter({ originalSha256: null, originalSize: null })), 'yes');
});

test('filters: codes, [since, until) on failedAt, positions; unreadable records only pass position filters', () => {
  const t = Date.parse('2025-03-01T10:00:00Z');
  const a = entry(3, letter({ failedAt: t }));
  const b = entry(1, letter({ errorCode: 'UNKNOWN_SCHEMA', failedAt: t + 60_000 }), 1);
  const bad = entry(0, undefined);
  assert.equal(matchesFilter(a, {}), true);
  assert.equal(matchesFilter(a, { codes: new Set(['UNKNOWN_SCHEMA']) }), false);
  assert.equal(matchesFilter(b, { codes: new Set(['UNKNOWN_SCHEMA']) }), true);
  assert.equal(matchesFilter(a, { since: t }), true, 'since is inclusive');
  assert.equal(matchesFilter(a, { until: t }), false, 'until is exclusive');
  assert.equal(matchesFilter(b, { since: t + 1, until: t + 60_001 }), true);
  assert.equal(matchesFilter(a, { positions: new Set(['0:3']) }), true);
  assert.equal(matchesFilter(b, { positions: new Set(['0:1']) }), false);
  assert.equal(matchesFilter(bad, {}), true);
  assert.equal(matchesFilter(bad, { codes: new Set(['UNKNOWN_SCHEMA']) }), false);
  assert.equal(matchesFilter(bad, { since: t }), false);
  assert.equal(matchesFilter(bad, { positions: new Set(['0:0']) }), true);
  // Sorted by partition then offset (numerically), then cut to the limit.
  const entries = [b, entry(10, letter()), a, bad, entry(9, letter())];
  assert.deepEqual(selectDeadLetters(entries, {}).map((e) => `${e.partition}:${e.offset}`), ['0:0', '0:3', '0:9', '0:10', '1:1']);
  assert.deepEqual(selectDeadLetters(entries, { codes: new Set(['NOTE_TOO_LARGE']) }, 2).map((e) => `${e.partition}:${e.offset}`), ['0:3', '0:9']);
});

test('the inspect view carries no note text: size, sha256, the key as text; the 16-byte hex prefix only under the PHI switch', () => {
  const view = viewOf(entry(7, letter()));
  const original = Buffer.from(NOTE_TEXT);
  assert.equal(view.size, original.length);
  assert.equal(view.sha256, sha(original));
  // An original without framing starts with its note text: its first bytes in hex are that text.
  assert.equal(view.firstBytes, null);
  assert.doesNotMatch(JSON.stringify(view), new RegExp(original.subarray(0, 8).toString('hex')));
  assert.equal(viewOf(entry(7, letter()), { firstBytes: true }).firstBytes, original.subarray(0, 16).toString('hex'));
  assert.equal(view.key, 'note-1');
  assert.equal(view.replay, 'yes');
  assert.equal(view.source?.offset, 42);
  assert.equal(view.failedAt, '2025-03-01T10:00:00.000Z');
  assert.doesNotMatch(JSON.stringify(view), /PHIMARKER|seizures/);
  const cut = viewOf(entry(8, letter({ originalTruncated: true, original: original.subarray(0, 4), originalSize: 9000, originalSha256: 'b'.repeat(64) })));
  assert.deepEqual([cut.cut, cut.size, cut.sha256, cut.replay], [true, 9000, 'b'.repeat(64), 'cut']);
  const tombstone = viewOf(entry(9, letter({ errorCode: 'EMPTY_RECORD', original: null, originalSha256: null, originalSize: null })));
  assert.deepEqual([tombstone.size, tombstone.sha256, tombstone.firstBytes, tombstone.replay], [null, null, null, 'never']);
  assert.match(viewLine(view, false), / size=35 sha256=[0-9a-f]{64} first=hidden cut=no /);
  assert.match(viewLine(viewOf(entry(7, letter()), { firstBytes: true }), true), new RegExp(` first=${original.subarray(0, 16).toString('hex')} cut=no `));
  assert.match(viewLine(tombstone, false), / size=\(null\) sha256=- first=- cut=no /);
  assert.equal(keyText(Buffer.from([0, 1, 2])), 'hex:000102');
  assert.equal(keyText(null), null);
});

test('the replayed record: the original key, value and headers, plus the replayed-from header (an earlier one replaced)', () => {
  const message = replayMessage(entry(5, letter({ originalHeaders: [{ key: 'x-origin', value: Buffer.from('test') }, { key: REPLAYED_FROM_HEADER, value: Buffer.from('old/0/1') }, { key: 'empty', value: null }] }), 2));
  assert.deepEqual(message.key, Buffer.from('note-1'));
  assert.deepEqual(message.value, Buffer.from(NOTE_TEXT));
  assert.deepEqual(
    Object.fromEntries(Object.entries(message.headers!).map(([k, v]) => [k, String(v)])),
    { 'x-origin': 'test', empty: '', [REPLAYED_FROM_HEADER]: 'dead/2/5' },
  );
  assert.equal(message.partition, undefined, 'the key decides the partition');
  const odd = replayMessage(entry(6, letter({ originalHeaders: [{ key: '__proto__', value: Buffer.from('p') }] }), 2));
  assert.equal(String(Object.getOwnPropertyDescriptor(odd.headers, '__proto__')?.value), 'p', 'a header named __proto__ is replayed as a header');
});

test('flag parsing: each bad value is refused in one line naming the flag and the value', () => {
  assert.deepEqual([...parseCodes(['NOTE_TOO_LARGE,UNKNOWN_SCHEMA', 'BAD_SPAN'])!], ['NOTE_TOO_LARGE', 'UNKNOWN_SCHEMA', 'BAD_SPAN']);
  assert.throws(() => parseCodes(['NOTE_TOO_LARGE', 'LINK_FAILED']), /^InputError: --code 'LINK_FAILED' is not a dead-letter code/);
  assert.equal(parseCodes(undefined), undefined);
  assert.equal(parseTime('2025-01-31', 'since'), Date.parse('2025-01-31T00:00:00Z'));
  assert.equal(parseTime('2025-01-31T12:00:00+01:00', 'until'), Date.parse('2025-01-31T11:00:00Z'));
  assert.throws(() => parseTime('yesterday', 'since'), /--since must be an ISO 8601 time .* got 'yesterday'/);
  assert.throws(() => parseTime('2025-13-45', 'since'), /--since must be an ISO 8601 time/);
  assert.throws(() => parseTime('2025-01-31T12:00', 'until'), /--until '2025-01-31T12:00' needs a zone/);
  assert.throws(() => parseFilterFlags({ since: '2025-02-01', until: '2025-01-01' }), /--since \(2025-02-01\) must be before --until \(2025-01-01\)/);
  assert.throws(() => parseFilterFlags({ limit: '0' }), /--limit must be ≥ 1/);
  assert.equal(parseFilterFlags({}).limit, Infinity);
  assert.deepEqual([...parseOffsets('0:12, 1:3', 2)!], ['0:12', '1:3']);
  assert.deepEqual([...parseOffsets('12,13', 1)!], ['0:12', '0:13']);
  assert.throws(() => parseOffsets('12', 3), /--offsets '12' names no partition and the dead-letter topic has 3/);
  assert.throws(() => parseOffsets('0:x', 1), /--offsets '0:x' is not partition:offset/);
  assert.throws(() => parseOffsets('4:1', 2), /--offsets '4:1': the dead-letter topic has no partition 4/);
});

test('UNKNOWN_SCHEMA: a record that names no schema (no C3 01 header, no fingerprint header, no Confluent magic byte) is never replayed; one that names a schema the stage may learn is', () => {
  const skip = (original: Buffer, headers: DeadLetterRecord['originalHeaders'] = []) => {
    const v = replayVerdict(entry(0, letter({ errorCode: 'UNKNOWN_SCHEMA', original, originalSha256: sha(original), originalSize: original.length, originalHeaders: headers })));
    return v.replayable ? 'yes' : `${v.skip}: ${v.detail}`;
  };
  const body = Buffer.from(NOTE_TEXT);
  assert.match(skip(body), /^never: UNKNOWN_SCHEMA never succeeds on replay for a record that names no schema/);
  assert.match(skip(body, [{ key: 'cuilink-schema', value: Buffer.from('org.cuilink.NoteEvent') }]), /^never: /, 'the schema name header is informative: readers go by the fingerprint');
  assert.equal(skip(Buffer.concat([Buffer.from([0xc3, 0x01]), Buffer.alloc(8, 0xff), body])), 'yes', 'single-object encoded under an unknown fingerprint');
  assert.equal(skip(body, [{ key: SCHEMA_FINGERPRINT_HEADER, value: Buffer.from('f'.repeat(64)) }]), 'yes', 'the deprecated fingerprint header');
  assert.equal(skip(Buffer.concat([Buffer.from([0, 0, 0, 0, 42]), body])), 'yes', 'a Confluent registry id: the stage switched to the confluent wire format reads it');
  // The docs' per-code table says so too.
  assert.match(readFileSync('docs/dead-letters.md', 'utf8'), /\| `UNKNOWN_SCHEMA` \| after a fix \(never for a record that names no schema, or another record type's\) \|/);
});

test("UNKNOWN_SCHEMA: a record naming a schema the codec knows as another record type's (a LinkedNote on the notes topic) fails again on replay, so is never replayed", () => {
  const schemas = knownSchemas();
  const body = Buffer.from(NOTE_TEXT);
  const linkedNoteV1 = schemas.all('LinkedNote').find((s) => !s.current)!;
  const cases: Array<[string, Buffer, DeadLetterRecord['originalHeaders'], string]> = [
    ['single-object, the current LinkedNote', Buffer.concat([Buffer.from([0xc3, 0x01]), schemas.current('LinkedNote').singleObjectFingerprint, body]), [], schemas.current('LinkedNote').name],
    ['single-object, an older LinkedNote', Buffer.concat([Buffer.from([0xc3, 0x01]), linkedNoteV1.singleObjectFingerprint, body]), [], linkedNoteV1.name],
    ['the deprecated header, a GoldMention', body, [{ key: SCHEMA_FINGERPRINT_HEADER, value: Buffer.from(schemas.current('GoldMention').fingerprint) }], schemas.current('GoldMention').name],
  ];
  const codec = new PlainAvroCodec();
  for (const [what, original, headers, name] of cases) {
    // What the stage does with it, again and again: the writer schema is fixed by its fingerprint.
    assert.throws(() => codec.decodeSync('NoteEvent', original, Object.fromEntries(headers.map((h) => [h.key, h.value!]))), (e: unknown) => e instanceof CuilinkError && e.code === 'UNKNOWN_SCHEMA', what);
    const v = replayVerdict(entry(0, letter({ errorCode: 'UNKNOWN_SCHEMA', original, originalSha256: sha(original), originalSize: original.length, originalHeaders: headers })));
    assert.equal(v.replayable, false, what);
    assert.equal(v.replayable === false && v.skip, 'never', what);
    assert.match(v.replayable === false ? v.detail : '', new RegExp(`^UNKNOWN_SCHEMA never succeeds on replay for a record of another type: it names ${name.replace(/\./g, '\\.')} \\(`), what);
  }
  assert.match(readFileSync('docs/dead-letters.md', 'utf8'), /or it is `UNKNOWN_SCHEMA` and the record names no schema at all, a schema of another record type/);
});

test('UNKNOWN_SCHEMA: a record whose single-object fingerprint and fingerprint header name two schemas fails again on replay, so is never replayed', () => {
  const schemas = knownSchemas();
  const note = schemas.current('NoteEvent');
  const original = Buffer.concat([Buffer.from([0xc3, 0x01]), note.singleObjectFingerprint, Buffer.from(NOTE_TEXT)]);
  const headers = [{ key: SCHEMA_FINGERPRINT_HEADER, value: Buffer.from('e'.repeat(64)) }];
  // What the stage does with it, again and again: both names are fixed by the bytes.
  assert.throws(() => new PlainAvroCodec().decodeSync('NoteEvent', original, { [SCHEMA_FINGERPRINT_HEADER]: headers[0]!.value }), (e: unknown) => e instanceof CuilinkError && e.code === 'UNKNOWN_SCHEMA' && /names another schema/.test(e.message));
  const v = replayVerdict(entry(0, letter({ errorCode: 'UNKNOWN_SCHEMA', original, originalSha256: sha(original), originalSize: original.length, originalHeaders: headers })));
  assert.equal(v.replayable === false && v.skip, 'never');
  assert.match(v.replayable === false ? v.detail : '', /names two schemas: its single-object fingerprint org\.cuilink\.NoteEvent .* and a cuilink-schema-fingerprint header eeee/);
  // Header and fingerprint that agree are read: no verdict of this kind.
  const agreeing = [{ key: SCHEMA_FINGERPRINT_HEADER, value: Buffer.from(note.fingerprint) }];
  const w = replayVerdict(entry(0, letter({ errorCode: 'UNKNOWN_SCHEMA', original, originalSha256: sha(original), originalSize: original.length, originalHeaders: agreeing })));
  assert.equal(w.replayable, true);
  assert.match(readFileSync('docs/dead-letters.md', 'utf8'), /or one whose single-object fingerprint and `cuilink-schema-fingerprint` header name two different schemas/);
});
