import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CuilinkError, InputError, ParseError } from '../../../src/kb/errors.ts';
import { isRecordFault, RECORD_FAULT_CODES } from '../../../src/stream/dead-letter-policy.ts';
import { decodeInputRecord } from '../../../src/stream/input-record.ts';
import { validateNote } from '../../../src/link/validate-note.ts';
import { DEAD_LETTER_CODES } from '../../../src/telemetry/stage-metrics.ts';
import type { StageCodec } from '../../../src/stream/stage-codec.ts';

test('the record-fault codes are exactly the dead-letter codes whose counters the stage exports', () => {
  assert.deepEqual([...RECORD_FAULT_CODES].sort(), [...DEAD_LETTER_CODES].sort());
});

test('isRecordFault: a non-retriable CuilinkError with a listed code, nothing else', () => {
  for (const code of RECORD_FAULT_CODES) {
    assert.equal(isRecordFault(new CuilinkError(code, 'x')), true, code);
    assert.equal(isRecordFault(new InputError('x', code)), true, code);
    assert.equal(isRecordFault(new CuilinkError(code, 'x', { retriable: true })), false, `${code}, retriable`);
  }
  for (const code of ['INFERENCE_FAILED', 'LINK_FAILED', 'ENCODER_FAILED', 'ENCODER_CLOSED', 'ENCODER_RESTARTING', 'BAD_MODEL', 'MODEL_MISMATCH', 'SCHEMA_INVALID', 'INVALID_RECORD', 'DEAD_LETTER_TOO_LARGE', 'REGISTRY_UNAVAILABLE', 'INVALID_INPUT']) {
    assert.equal(isRecordFault(new CuilinkError(code, 'x')), false, code);
  }
  assert.equal(isRecordFault(new ParseError('f', 1, 'bad line')), false, 'PARSE_ERROR is a file, not a record');
  assert.equal(isRecordFault(new Error('x')), false);
  assert.equal(isRecordFault(new TypeError('x')), false);
  assert.equal(isRecordFault(Object.assign(new Error('x'), { code: 'BAD_NOTE' })), false, 'a code on a plain Error is no proof');
  assert.equal(isRecordFault({ code: 'BAD_NOTE' }), false);
  assert.equal(isRecordFault(undefined), false);
});

test('what the validator and the decoder reject records with is a record fault', async () => {
  const rejected: unknown[] = [];
  for (const bad of [null, { noteId: '' }, { noteId: 'n', text: '' }, { noteId: 'n', text: 'abc', mentions: [{ id: 'm', start: 0, end: 9, text: 'abc', label: 'x' }] }, { noteId: 'n', text: 'abc', mentions: [{ id: 'm', start: 0, end: 2, text: 'xx', label: 'x' }] }]) {
    try {
      validateNote(bad);
    } catch (error) {
      rejected.push(error);
    }
  }
  const codec = { decodeNote: async () => ({}) } as unknown as StageCodec;
  const empty = await decodeInputRecord(codec, { value: Buffer.alloc(0) } as never, { maxNoteChars: 10, maxMentions: 1, maxMentionChars: 5 });
  assert.equal(empty.kind, 'rejected');
  rejected.push((empty as { error: unknown }).error);
  assert.equal(rejected.length, 6);
  for (const error of rejected) assert.equal(isRecordFault(error), true, (error as CuilinkError).code);
});

test('decodeInputRecord: a record fault from the codec is rejected; any other error is thrown, never dead-lettered', async () => {
  const limits = { maxNoteChars: 10, maxMentions: 1, maxMentionChars: 5 };
  const throwing = (error: unknown) => ({ decodeNote: async () => { throw error; } }) as unknown as StageCodec;
  const record = { value: Buffer.from('x'), headers: {} } as never;
  const undecodable = await decodeInputRecord(throwing(new CuilinkError('UNDECODABLE', 'bad varint')), record, limits);
  assert.equal(undecodable.kind, 'rejected');
  // A bug in the codec or the stage, an internal code, a registry that is down: internal faults.
  for (const error of [new TypeError("Cannot read properties of undefined (reading 'map')"), new CuilinkError('SCHEMA_INVALID', 'x'), new CuilinkError('REGISTRY_UNAVAILABLE', 'x', { retriable: true })]) {
    await assert.rejects(decodeInputRecord(throwing(error), record, limits), (thrown: unknown) => thrown === error);
  }
});
