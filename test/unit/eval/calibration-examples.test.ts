import { test } from 'node:test';
import assert from 'node:assert/strict';
import { calibrationExamples } from '../../../src/eval/confidence/calibration-examples.ts';
import { emptyPubTatorStats } from '../../../src/eval/pubtator.ts';
import type { GoldCorpus } from '../../../src/eval/gold.ts';
import type { ScoredMention } from '../../../src/eval/metrics/mention-record.ts';
import { ConceptFacts } from '../../../src/link/concept-facts.ts';
import { CONFIDENCE_FEATURES } from '../../../src/link/confidence-features.ts';
import type { LinkedMention } from '../../../src/link/types.ts';

const mention = (id: string, text: string) => ({ id, start: 0, end: text.length, text, label: 'Disease' });
const corpus: GoldCorpus = {
  notes: [
    { noteId: 'n1', text: 'x', mentions: [mention('a', 'fever'), mention('b', 'pyrexia'), mention('c', 'nothing')] },
    { noteId: 'n2', text: 'y', mentions: [mention('d', 'fever')] },
  ],
  gold: new Map(),
  stats: emptyPubTatorStats(),
};
const linked = (conceptId: string | undefined): LinkedMention => ({
  mentionId: 'x', start: 0, end: 1, label: 'Disease', conceptId: conceptId ?? null, conceptName: null, semanticTypes: [], score: 0.8, confidence: null, via: conceptId ? 'dense' : null, nil: !conceptId, reranked: false,
  candidates: conceptId ? [{ conceptId, name: conceptId, semanticTypes: [], score: 0.8, retrievalScore: 0.8, exact: false, via: 'dense' }] : [],
});
const scored = (noteId: string, mentionId: string, hit1: boolean) =>
  ({ noteId, mentionId, goldIds: [], predicted: [], nil: false, topScore: 0, label: 'Disease', semanticTypes: [], scores: { hit1, hit5: hit1, reciprocalRank: 0, similarity: 0, ndcg5: 0, goldNil: false, predictedNil: false, confidence: 0 } }) as ScoredMention;

test('one example per linked mention, labelled by its top-1, with only its own note as context', () => {
  const result = {
    scored: [scored('n1', 'a', true), scored('n2', 'd', false), scored('n1', 'b', true), scored('n1', 'c', false)],
    linked: [linked('C:fever'), linked('C:fever'), linked('C:fever'), linked(undefined)],
  };
  const { rows, labels, indices } = calibrationExamples(corpus, result, new ConceptFacts([]));
  assert.equal(rows.length, 3, 'the mention without candidates is left out');
  assert.deepEqual(indices, [0, 2, 1], "each example's position in the result, in example order");
  const same = CONFIDENCE_FEATURES.indexOf('note_same_concept');
  const surface = CONFIDENCE_FEATURES.indexOf('note_same_surface');
  // Grouped by note: n1's a and b see each other (same concept), n2's d sees nobody although n1 has 'fever' too.
  assert.deepEqual(rows.map((r) => [r[same], r[surface]]), [[Math.log1p(1), 0], [Math.log1p(1), 0], [0, 0]]);
  assert.deepEqual(labels, [true, true, false]);
});
