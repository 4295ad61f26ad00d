import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeDecision } from '../../../src/cli/link-decision.ts';
import type { Candidate, LinkedMention } from '../../../src/link/types.ts';

function candidate(conceptId: string, via: string, score = 0.9): Candidate {
  return { conceptId, name: conceptId, semanticTypes: [], score, retrievalScore: score, exact: via === 'exact', via };
}

function mention(fields: Partial<LinkedMention>): LinkedMention {
  return { mentionId: 'm1', start: 0, end: 1, label: 'Disease', conceptId: 'C1', conceptName: 'C1', semanticTypes: [], score: 0.9, confidence: 0.8, via: 'dense', nil: false, reranked: false, candidates: [candidate('C1', 'dense')], expandedFrom: null, ...fields };
}

test('the stage that chose the concept names the decision', () => {
  assert.equal(describeDecision(mention({ via: 'exact', candidates: [candidate('C1', 'exact')] })), 'exact');
  assert.equal(describeDecision(mention({ via: 'loose', candidates: [candidate('C1', 'loose')] })), 'loose', 'a looser lookup never reads as exact');
  assert.equal(describeDecision(mention({})), 'dense');
});

test('a reranked list says so beside its stage', () => {
  assert.equal(describeDecision(mention({ via: 'abbreviation', reranked: true })), 'abbreviation, reranked');
});

test('NIL before everything else, with the probabilities that sent it there', () => {
  assert.equal(describeDecision(mention({ nil: true, conceptId: null, conceptName: null, confidence: 0.12, candidates: [candidate('C1', 'dense', 0.1)] })), 'NIL (confidence 0.12)');
  assert.equal(describeDecision(mention({ nil: true, conceptId: null, conceptName: null, confidence: null, via: null, candidates: [] })), 'NIL');
  assert.equal(describeDecision(mention({ nil: true, conceptId: null, conceptName: null, confidence: 0.31, inKb: 0.42 })), 'NIL (P(in KB) 0.42, confidence 0.31)');
});
