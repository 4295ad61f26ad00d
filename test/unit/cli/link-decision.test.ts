import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeDecision, rankPath } from '../../../src/cli/link-decision.ts';
import type { Candidate, LinkedMention } from '../../../src/link/types.ts';

function candidate(conceptId: string, exact: boolean, score = 0.9): Candidate {
  return { conceptId, name: conceptId, semanticTypes: [], score, retrievalScore: score, exact };
}

function mention(fields: Partial<LinkedMention>): LinkedMention {
  return { mentionId: 'm1', start: 0, end: 1, label: 'Disease', conceptId: 'C1', conceptName: 'C1', semanticTypes: [], score: 0.9, nil: false, reranked: false, candidates: [candidate('C1', false)], expandedFrom: null, ...fields };
}

test('exact: the chosen candidate came from the exact-name table and was not reranked', () => {
  assert.equal(describeDecision(mention({ candidates: [candidate('C1', true), candidate('C2', false)] })), 'exact');
});

test('dense: a non-exact candidate ranked by retrieval alone', () => {
  assert.equal(describeDecision(mention({ candidates: [candidate('C1', false), candidate('C2', true, 0.5)] })), 'dense');
});

test('reranked wins over exact: the cross-encoder decided between the candidates', () => {
  const m = mention({ reranked: true, candidates: [candidate('C1', true), candidate('C2', true)] });
  assert.equal(rankPath(m), 'reranked');
  assert.equal(describeDecision(m), 'reranked');
});

test('abbreviation names the path its long form took', () => {
  assert.equal(describeDecision(mention({ expandedFrom: 'GDD', candidates: [candidate('C1', true)] })), 'abbreviation (exact)');
  assert.equal(describeDecision(mention({ expandedFrom: 'GDD', reranked: true })), 'abbreviation (reranked)');
});

test('NIL before everything else, abbreviation or not', () => {
  assert.equal(describeDecision(mention({ nil: true, conceptId: null, conceptName: null, expandedFrom: 'X', candidates: [candidate('C1', true, 0.1)] })), 'NIL');
});

test('the chosen concept is looked up among the candidates, not assumed first', () => {
  assert.equal(rankPath(mention({ conceptId: 'C2', candidates: [candidate('C1', false), candidate('C2', true)] })), 'exact');
});
