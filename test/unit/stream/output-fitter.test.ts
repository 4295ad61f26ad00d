import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { KafkaClient } from '../../../src/stream/kafka/client-types.ts';
import type { LinkedNote } from '../../../src/link/types.ts';
import { DEFAULT_NOTE_LIMITS } from '../../../src/link/validate-note.ts';
import { AvroStageCodec, MAX_DEAD_LETTER_REASON_CHARS, noteInputToNoteEvent, PlainAvroCodec } from '../../../src/stream/avro/index.ts';
import { decodeInputRecord } from '../../../src/stream/input-record.ts';
import { CANDIDATES_CUT_HEADER, OutputFitter } from '../../../src/stream/output-fitter.ts';
import type { StageCodec } from '../../../src/stream/stage-codec.ts';
import { recordBytes, TopicSizeLimits } from '../../../src/stream/topic-size-limits.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';

const codec = new AvroStageCodec(new PlainAvroCodec());
const quiet = createLogger({ level: 'error' });

async function limits(maxMessageBytes: number): Promise<TopicSizeLimits> {
  const sizes = new TopicSizeLimits();
  await sizes.load(undefined as unknown as KafkaClient, ['out', 'dead'], maxMessageBytes, quiet);
  return sizes;
}

function linkedNote(mentions: number, candidates: number): LinkedNote {
  return {
    noteId: 'n-1',
    mentions: Array.from({ length: mentions }, (_, i) => ({
      mentionId: `m${i}`, start: i * 10, end: i * 10 + 5, label: 'Phenotype', conceptId: 'HP:0001250', conceptName: 'Seizure', semanticTypes: ['Phenotypic abnormality'], score: 0.9, confidence: 0.9, via: 'exact', nil: false, reranked: false,
      candidates: Array.from({ length: candidates }, (_, c) => ({ conceptId: `HP:${String(c).padStart(7, '0')}`, name: `Concept ${c}`, semanticTypes: ['Phenotypic abnormality'], score: 1 - c / 100, retrievalScore: 1 - c / 100, exact: c === 0, via: c === 0 ? 'exact' : 'dense' })),
    })),
    linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 1,
  };
}

test('a LinkedNote too large keeps fewer candidates per mention, then none, then does not fit at all', async () => {
  const sizes = await limits(8192);
  const fitter = new OutputFitter(codec, sizes);
  const toMessage = (encoded: { value: Buffer; headers: Record<string, string | Buffer> }) => ({ key: 'n-1', value: encoded.value, headers: encoded.headers });
  const small = await fitter.linked('out', linkedNote(2, 5), toMessage);
  assert.equal(small?.headers?.[CANDIDATES_CUT_HEADER], undefined, 'a record that fits is left alone');
  const cut = await fitter.linked('out', linkedNote(30, 20), toMessage);
  assert.ok(cut && recordBytes(cut) <= sizes.recordBudget('out'));
  const keep = Number(cut.headers![CANDIDATES_CUT_HEADER]);
  assert.ok(keep < 20);
  const decoded = await new PlainAvroCodec().decode('LinkedNote', cut.value as Buffer, cut.headers as never);
  assert.ok(decoded.mentions.length === 30 && decoded.mentions.every((m) => m.candidates.length <= keep && m.conceptId === 'HP:0001250'));
  assert.equal(await fitter.linked('out', linkedNote(400, 3), toMessage), undefined, 'too large even without candidates');
});

test('a dead letter too large carries a cut original with the whole one’s sha256 and size', async () => {
  const sizes = await limits(8192);
  const fitter = new OutputFitter(codec, sizes);
  const original = Buffer.alloc(50_000, 3);
  const info = { errorCode: 'UNKNOWN_SCHEMA', reason: 'r', sourceTopic: 'in', sourcePartition: 1, sourceOffset: '42', stage: 'decode', failedAt: 1, key: Buffer.alloc(2000, 1), value: original, headers: { big: Buffer.alloc(3000) } };
  const { message, cut } = await fitter.deadLetter('dead', info, (encoded, key) => ({ key, value: encoded.value, headers: encoded.headers }));
  assert.equal(cut, true);
  assert.ok(recordBytes(message) <= sizes.recordBudget('dead'));
  const letter = await new PlainAvroCodec().decode('DeadLetter', message.value as Buffer, message.headers as never);
  assert.equal(letter.originalTruncated, true);
  assert.equal(letter.originalSize, original.length);
  assert.equal(letter.originalSha256, createHash('sha256').update(original).digest('hex'));
  assert.ok(letter.original!.length > 0 && original.subarray(0, letter.original!.length).equals(Buffer.from(letter.original!)));
  assert.equal(letter.offset, 42);
  const whole = await fitter.deadLetter('dead', { ...info, value: Buffer.from('small'), key: null, headers: {} }, (encoded, key) => ({ key, value: encoded.value, headers: encoded.headers }));
  assert.equal(whole.cut, false);
});

test('produce requests are cut so that their records together fit one batch; a refusal lowers the limit', async () => {
  const sizes = await limits(4096);
  const messages = Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, value: Buffer.alloc(1000) }));
  const chunks = sizes.chunk('out', messages);
  assert.deepEqual(chunks.flat(), messages, 'all, in order');
  for (const chunk of chunks) assert.ok(chunk.reduce((sum, m) => sum + recordBytes(m), 0) <= sizes.recordBudget('out'));
  const before = sizes.maxMessageBytes('out');
  const lowered = sizes.lower('out', 3000);
  assert.ok(lowered < before && lowered < 3000 + 128);
  assert.ok(sizes.lower('out', 100_000) < lowered, 'never raised, always lowered');
});

test('a LinkedNote with more mentions than a call takes arguments (limits.maxMentionsPerNote has no ceiling) is refused, not a RangeError', async () => {
  const sizes = await limits(8192);
  // Sized, not encoded: 250,000 mentions through Avro would only slow the test down.
  const sized = { encodeLinkedNote: async (note: LinkedNote) => ({ value: Buffer.alloc(note.mentions.length), headers: {} }) } as unknown as StageCodec;
  const fitter = new OutputFitter(sized, sizes);
  const toMessage = (encoded: { value: Buffer; headers: Record<string, string | Buffer> }) => ({ key: 'n-1', value: encoded.value, headers: encoded.headers });
  // A RangeError is an internal fault: the partition's batch would be handed back for good instead of the note dead-lettered OUTPUT_TOO_LARGE.
  assert.equal(await fitter.linked('out', linkedNote(250_000, 1), toMessage), undefined);
});

test('a dead letter\'s reason is cut to its bound: a record whose reason quotes a long note id is dead-lettered, not DEAD_LETTER_TOO_LARGE', async () => {
  const sizes = await limits(8192);
  const fitter = new OutputFitter(codec, sizes);
  // An empty note with a 20,000-character id: the validator's reason names the note by its id.
  const noteId = `n-${'7'.repeat(20_000)}`;
  const encoded = await new PlainAvroCodec().encode('NoteEvent', noteInputToNoteEvent({ noteId, text: '', mentions: [] }, 1));
  const message = { topic: 'in', partition: 0, offset: '5', timestamp: '1', key: Buffer.from(noteId), value: encoded.value, headers: Object.fromEntries(Object.entries(encoded.headers).map(([k, v]) => [k, Buffer.from(v)])) };
  const rejected = await decodeInputRecord(codec, message, DEFAULT_NOTE_LIMITS);
  assert.ok(rejected.kind === 'rejected' && rejected.error.code === 'EMPTY_NOTE');
  const info = { errorCode: rejected.error.code, reason: rejected.error.message, sourceTopic: 'in', sourcePartition: 0, sourceOffset: '5', stage: rejected.step, failedAt: 1, key: message.key, value: message.value, headers: message.headers };
  const { message: letter } = await fitter.deadLetter('dead', info, (e, key) => ({ key, value: e.value, headers: e.headers }));
  assert.ok(recordBytes(letter) <= sizes.recordBudget('dead'));
  const decoded = await new PlainAvroCodec().decode('DeadLetter', letter.value as Buffer, letter.headers as never);
  assert.equal(MAX_DEAD_LETTER_REASON_CHARS, 1000);
  assert.ok(decoded.reason.length <= MAX_DEAD_LETTER_REASON_CHARS, `reason of ${decoded.reason.length} characters`);
  assert.ok(decoded.reason.startsWith('note n-777'), 'the start is kept');
  assert.match(decoded.reason, /cut/, 'and says it was cut');
  const short = await fitter.deadLetter('dead', { ...info, reason: 'note n-1: empty text' }, (e, key) => ({ key, value: e.value, headers: e.headers }));
  assert.equal((await new PlainAvroCodec().decode('DeadLetter', short.message.value as Buffer, short.message.headers as never)).reason, 'note n-1: empty text', 'a short reason is left whole');
});
