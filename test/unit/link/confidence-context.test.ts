import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Concept } from '../../../src/kb/concept.ts';
import { ConceptFacts } from '../../../src/link/concept-facts.ts';
import { CONFIDENCE_FEATURES, confidenceFeatures, noteNeighbours } from '../../../src/link/confidence-features.ts';
import type { Candidate, LinkedMention } from '../../../src/link/types.ts';

const concept = (id: string, synonyms: string[], parents: string[]): Concept => ({ id, name: id, synonyms, parents, semanticTypes: [], xrefs: [], altIds: [] });
const facts = new ConceptFacts([concept('C:root', [], []), concept('C:a', ['a1', 'a2', 'a3'], ['C:root']), concept('C:b', [], ['C:root']), concept('C:a1', [], ['C:a'])]);
const cand = (conceptId: string, via: string, score: number): Candidate => ({ conceptId, name: conceptId, semanticTypes: [], score, retrievalScore: score, exact: via === 'exact', via });
const link = (via: string, ...candidates: Candidate[]): LinkedMention => ({
  mentionId: 'm', start: 0, end: 1, label: 'Disease', conceptId: candidates[0]?.conceptId ?? null, conceptName: null, semanticTypes: [], score: candidates[0]?.score ?? 0,
  confidence: null, via, nil: false, reranked: false, candidates,
});
const get = (x: Float64Array, name: (typeof CONFIDENCE_FEATURES)[number]) => x[CONFIDENCE_FEATURES.indexOf(name)]!;

test('ConceptFacts: synonyms, children and direct parents; unknown ids are neutral', () => {
  assert.deepEqual([facts.synonyms('C:a'), facts.children('C:root'), facts.children('C:a'), facts.children('C:a1')], [3, 2, 1, 0]);
  assert.ok(facts.isParent('C:a', 'C:a1') && !facts.isParent('C:a1', 'C:a') && !facts.isParent('C:root', 'C:a1'), 'direct parents only');
  assert.deepEqual([facts.synonyms('nope'), facts.children('nope'), facts.isParent('nope', 'C:a')], [0, 0, false]);
});

test('KB features: how general the chosen concept is, and whether the runner-up is its parent or child', () => {
  const x = confidenceFeatures(link('dense', cand('C:a', 'dense', 0.8), cand('C:a1', 'dense', 0.79)), 'some text', facts);
  assert.equal(get(x, 'runner_up_related'), 1);
  assert.equal(get(x, 'synonyms'), Math.log1p(3));
  assert.equal(get(x, 'children'), Math.log1p(1));
  assert.equal(get(x, 'dense_children'), Math.log1p(1));
  assert.equal(get(confidenceFeatures(link('dense', cand('C:a', 'dense', 0.8), cand('C:b', 'dense', 0.7)), 'x', facts), 'runner_up_related'), 0, 'siblings are not parent and child');
  assert.equal(get(confidenceFeatures(link('exact', cand('C:a', 'exact', 1)), 'x', facts), 'dense_children'), 0, 'the dense-only terms stay 0 for a name match');
  assert.equal(get(confidenceFeatures(link('dense', cand('C:a', 'dense', 0.8)), 'x'), 'synonyms'), 0, 'without facts the KB features are 0');
});

test('note features: the other mentions of the note that link the same concept, by an exact name or not, and repeat the surface', () => {
  const mentions = [
    { linked: link('dense', cand('C:a', 'dense', 0.8)), text: 'Foo' },
    { linked: link('exact', cand('C:a', 'exact', 1)), text: 'bar' },
    { linked: link('dense', cand('C:a', 'dense', 0.7)), text: 'foo' },
    { linked: link('dense', cand('C:b', 'dense', 0.7)), text: 'baz' },
  ];
  const neighbours = noteNeighbours(mentions);
  assert.equal(neighbours[0]!.tops.length, 3, 'all but itself');
  const x = confidenceFeatures(mentions[0]!.linked, 'Foo', facts, neighbours[0]);
  assert.equal(get(x, 'note_same_concept'), Math.log1p(2));
  assert.equal(get(x, 'note_same_exact'), Math.log1p(1));
  assert.equal(get(x, 'note_same_surface'), Math.log1p(1), 'case-folded');
  assert.equal(get(x, 'dense_note_same'), Math.log1p(2));
  const alone = confidenceFeatures(mentions[3]!.linked, 'baz', facts, neighbours[3]);
  assert.deepEqual([get(alone, 'note_same_concept'), get(alone, 'note_same_exact'), get(alone, 'note_same_surface')], [0, 0, 0]);
});
