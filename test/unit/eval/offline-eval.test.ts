import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadKb } from '../../../src/kb/load.ts';
import { loadPubTatorCorpus } from '../../../src/eval/gold.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { evaluateCorpus } from '../../../src/eval/offline-eval.ts';
import { fakeLinker, SAMPLE_TABLE } from './fake-linker.ts';

test('offline eval links the corpus in batches and scores every gold mention', async () => {
  const corpus = await loadPubTatorCorpus('test/fixtures/eval/sample.PubTator');
  const view = kbOntologyView(await loadKb(['test/fixtures/eval/mini-kb.jsonl'], { format: 'jsonl' }));
  const core = fakeLinker(SAMPLE_TABLE);
  const result = await evaluateCorpus(core, corpus, view, { batchSize: 2 });
  assert.equal(core.calls, 2); // 3 notes in batches of 2
  assert.equal(result.mentions, 8);
  assert.equal(result.missingPredictions, 0);
  const o = result.metrics.overall;
  // Hits at 1: Colon cancer, colon cancer, the composite (ovarian), ochronotic (joint diseases), asthma = 5/8.
  assert.equal(o.acc1, 5 / 8);
  // breast cancer has its gold at rank 2: acc@5 6/8, MRR (5 + ½)/8.
  assert.equal(o.acc5, 6 / 8);
  assert.equal(o.mrr, 5.5 / 8);
  // OMIM:601665 is not in the KB and the fake linker has nothing for it: NIL, rightly.
  assert.equal(o.goldNil, 1);
  assert.equal(o.nilPrecision, 1);
  assert.equal(o.nilRecall, 1);
  // anemia → Anemia, Hemolytic (a child): similarity ½; breast cancer → ovarian (sibling): ⅓.
  const similarity = (5 + 0.5 + 1 / 3) / 8;
  assert.ok(Math.abs(o.similarity! - similarity) < 1e-9);
  assert.deepEqual(Object.keys(result.metrics.byLabel), ['CompositeMention', 'Disease', 'DiseaseClass', 'Modifier', 'SpecificDisease']);
  assert.deepEqual(Object.keys(result.metrics.bySemanticType), ['T047', 'T191']);
});

test('confidencePoints: one point per linked mention with a confidence, grouped by note', async () => {
  const { confidencePoints } = await import('../../../src/eval/offline-eval.ts');
  const scored = (noteId: string, hit1: boolean) => ({ noteId, scores: { hit1 } }) as never;
  const linked = (conceptId: string | undefined, confidence: number | null) => ({ confidence, candidates: conceptId ? [{ conceptId }] : [] }) as never;
  const points = confidencePoints({
    scored: [scored('n1', true), scored('n1', true), scored('n1', false), scored('n2', true), scored('n2', false), scored('n2', false)],
    linked: [linked('A', 0.9), linked('A', 0.8), linked('B', 0.4), linked('A', 0.9), linked(undefined, 0.1), linked('C', null)],
  });
  // The mention without candidates and the one without a confidence are not points.
  assert.deepEqual(points.map((p) => [p.confidence, p.correct]), [[0.9, true], [0.8, true], [0.4, false], [0.9, true]]);
  const groups = points.map((p) => p.group);
  // A note's links stand or fall together, whatever concept (bench/results/calibration-test-validity.txt).
  assert.equal(groups[0], groups[1], 'one note, one concept: one group');
  assert.equal(groups[0], groups[2], 'one note, another concept: the same group');
  assert.notEqual(groups[0], groups[3], 'another note');
});

test('offline eval scores the corpus at once: a note\'s mentions are one group of the calibration test, as confidencePoints groups them', async () => {
  const corpus = await loadPubTatorCorpus('test/fixtures/eval/sample.PubTator');
  const view = kbOntologyView(await loadKb(['test/fixtures/eval/mini-kb.jsonl'], { format: 'jsonl' }));
  const fake = fakeLinker(SAMPLE_TABLE);
  // The fake linker's links with a calibrated confidence of 0.8 wherever they have candidates.
  const core = { ...fake, linkNotes: async (notes: Parameters<typeof fake.linkNotes>[0]) => (await fake.linkNotes(notes)).map((n) => ({ ...n, mentions: n.mentions.map((m) => ({ ...m, confidence: m.candidates.length > 0 ? 0.8 : null })) })) };
  const result = await evaluateCorpus(core, corpus, view, { batchSize: 1 });
  const rows = Object.fromEntries(result.scored.map((s) => [`${s.noteId} ${s.mentionId}`, s.scores.calibrationVariance]));
  // Note 1001's five links at 0.8 all fall in one bin and share one draw: each row is 5 · 0.8 · 0.2.
  for (const m of ['0-12', '17-30', '46-58', '63-69', '71-96']) assert.ok(Math.abs(rows[`1001 ${m}`]! - 0.8) < 1e-12, JSON.stringify(rows));
  // Note 1002 has one link with a confidence (two rows of 0.16 would be a pair): 0.8 · 0.2.
  assert.ok(Math.abs(rows['1002 0-22']! - 0.16) < 1e-12);
  // No candidates (OMIM disease, unknown syndrome): no confidence, nothing to add.
  assert.equal(rows['1002 60-72'], 0);
  assert.notEqual(result.metrics.overall.calibrationP, null);
});
