import { test } from 'node:test';
import assert from 'node:assert/strict';
import { needsRerank } from '../../../src/link/rerank-phase.ts';
import { parseLinkConfig } from '../../../src/link/link-config.ts';
import type { MentionWork } from '../../../src/link/mention-work.ts';
import type { ConceptHit } from '../../../src/retrieve/candidate-retriever.ts';

const exact = (conceptIndex: number): ConceptHit => ({ conceptIndex, score: 1, similarity: 1, via: 'exact', exact: true, lexical: true });
const loose = (conceptIndex: number): ConceptHit => ({ conceptIndex, score: 1, similarity: 0.9, via: 'loose', exact: false, lexical: true });
const dense = (conceptIndex: number, score: number): ConceptHit => ({ conceptIndex, score, similarity: score, via: 'dense', exact: false, lexical: false });

function work(hits: ConceptHit[], memoryDecided = false): MentionWork {
  return {
    noteIndex: 0,
    mention: { id: 'm', start: 0, end: 1, text: 'x', label: 'Disease' },
    expandedFrom: null,
    exactTexts: ['x'],
    readings: [],
    senses: [],
    query: 'x',
    rerankQuery: 'x',
    contextKey: '',
    hits,
    scores: hits.map((h) => h.score),
    reranked: false,
    memoryDecided,
    memorySupport: 0,
  };
}

const rerank = (policy: 'never' | 'ambiguous' | 'inexact' | 'always', margin = 0.05) => parseLinkConfig({ rerank: { policy, margin } }).rerank;

test('ambiguous: dense hits within the margin are reranked, a clear dense winner is not', () => {
  assert.equal(needsRerank(work([dense(0, 0.80), dense(1, 0.78)]), rerank('ambiguous')), true);
  assert.equal(needsRerank(work([dense(0, 0.80), dense(1, 0.70)]), rerank('ambiguous')), false);
  assert.equal(needsRerank(work([dense(0, 0.80), dense(1, 0.70)]), rerank('ambiguous', 0.2)), true);
});

test('ambiguous: a name-lookup hit ahead of dense ones stands; two tied lookups are weighed', () => {
  assert.equal(needsRerank(work([exact(0), dense(1, 0.99)]), rerank('ambiguous')), false);
  assert.equal(needsRerank(work([exact(0), exact(1)]), rerank('ambiguous')), true);
  assert.equal(needsRerank(work([loose(0), loose(1), dense(2, 0.5)]), rerank('ambiguous')), true);
});

test('inexact reranks everything but a unique true exact match; always and never do what they say', () => {
  assert.equal(needsRerank(work([exact(0), dense(1, 0.5)]), rerank('inexact')), false);
  assert.equal(needsRerank(work([loose(0), dense(1, 0.5)]), rerank('inexact')), true);
  assert.equal(needsRerank(work([exact(0), dense(1, 0.5)]), rerank('always')), true);
  assert.equal(needsRerank(work([dense(0, 0.5), dense(1, 0.5)]), rerank('never')), false);
});

test('a single candidate, or a link the memory decided, is never reranked', () => {
  assert.equal(needsRerank(work([dense(0, 0.5)]), rerank('always')), false);
  assert.equal(needsRerank(work([dense(0, 0.5), dense(1, 0.5)], true), rerank('always')), false);
});
