import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mentionsToReview } from '../../../src/stream/review-selection.ts';
import { linkedMentionToReview } from '../../../src/stream/avro/avro-conversions.ts';
import { knownSchemas, PlainAvroCodec, SCHEMA_FINGERPRINT_HEADER } from '../../../src/stream/avro/index.ts';
import { loadStageConfig } from '../../../src/stream/stage-config.ts';
import type { LinkedMention, LinkedNote } from '../../../src/link/types.ts';

const mention = (id: string, confidence: number | null, nil = false): LinkedMention => ({
  mentionId: id, start: 0, end: 3, label: 'Phenotype', conceptId: nil ? null : 'HP:1', conceptName: nil ? null : 'x', semanticTypes: [], score: 0.7,
  confidence, via: 'dense', nil, reranked: false, candidates: [{ conceptId: 'HP:1', name: 'x', semanticTypes: [], score: 0.7, retrievalScore: 0.7, exact: false, via: 'dense' }],
});
const note = (mentions: LinkedMention[]): LinkedNote => ({ noteId: 'n1', mentions, linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 5 });

test('review takes NIL mentions and those under the confidence bar, nothing else', () => {
  const picked = mentionsToReview(note([mention('sure', 0.9), mention('unsure', 0.49), mention('edge', 0.5), mention('nil', 0.1, true)]), 0.5);
  assert.deepEqual(picked.map((m) => m.mentionId), ['unsure', 'nil']);
});

test('without a calibration (confidence null) only NIL mentions are reviewed: a raw score is no probability', () => {
  assert.deepEqual(mentionsToReview(note([mention('a', null), mention('b', null, true)]), 0.99).map((m) => m.mentionId), ['b']);
});

test('a review record is valid ReviewMention Avro and carries the link, its candidates and versions', () => {
  const record = linkedMentionToReview(note([]), mention('m', 0.3));
  const type = knownSchemas().current('ReviewMention').type;
  assert.ok(type.isValid(record));
  assert.deepEqual(JSON.parse(JSON.stringify(type.fromBuffer(type.toBuffer(record)))), record);
  assert.deepEqual([record.noteId, record.conceptId, record.confidence, record.candidates[0]!.via, record.linkedAt], ['n1', 'HP:1', 0.3, 'dense', 5]);
  assert.equal(record.inKb, null, 'no P(in KB) without a NIL part');
});

test('a review record carries P(in KB), so an annotator sees why a NIL was sent', async () => {
  const nil = { ...mention('m', 0.2, true), inKb: 0.41 };
  const record = linkedMentionToReview(note([nil]), nil);
  const codec = new PlainAvroCodec();
  const decoded = await codec.decode('ReviewMention', (await codec.encode('ReviewMention', record)).value);
  assert.deepEqual([decoded.inKb, decoded.nil, decoded.conceptId], [0.41, true, null]);
});

test('evolution: a ReviewMention written with the v1 schema (no inKb) is read with inKb null, everything else kept', async () => {
  const schemas = knownSchemas();
  const v1 = schemas.all('ReviewMention').find((s) => /review-mention\.v1\.avsc$/.test(s.file));
  assert.ok(v1 !== undefined, 'schemas/history holds ReviewMention v1');
  const { inKb: _k, ...v1Record } = linkedMentionToReview(note([]), { ...mention('m', 0.3), inKb: 0.9 });
  const bytes = v1.type.toBuffer(v1Record);
  assert.throws(() => schemas.current('ReviewMention').type.fromBuffer(bytes), 'the current schema is not v1 on the wire');
  const codec = new PlainAvroCodec();
  const decoded = await codec.decode('ReviewMention', bytes, { [SCHEMA_FINGERPRINT_HEADER]: v1.fingerprint });
  assert.deepEqual(JSON.parse(JSON.stringify(decoded)), { ...v1Record, inKb: null });
  assert.deepEqual(await codec.decode('ReviewMention', Buffer.concat([Buffer.from('c301', 'hex'), v1.singleObjectFingerprint, bytes])), decoded, 'single-object v1');
});

test('stage config: the review topic and bar come from env too, and a bar outside [0, 1] is refused', () => {
  const config = loadStageConfig({ env: { CUILINK_REVIEW_TOPIC: 'cuilink.review', CUILINK_REVIEW_BELOW: '0.4' } });
  assert.deepEqual([config.topics.review, config.review.belowConfidence], ['cuilink.review', 0.4]);
  assert.equal(loadStageConfig({ env: {} }).topics.review, undefined, 'off unless set');
  assert.throws(() => loadStageConfig({ env: { CUILINK_REVIEW_BELOW: '1.5' } }), /belowConfidence/);
  assert.equal(loadStageConfig({ env: { CUILINK_CALIBRATION: 'none' } }).linker.calibration, false, 'the calibration can be turned off');
  assert.equal(loadStageConfig({ env: {}, overrides: { 'linker.calibration': 'cal.json' } }).linker.calibration, 'cal.json');
});
