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

test('name features: the best-fitting name of the chosen concept, by missing words and by character trigrams', () => {
  const named = new ConceptFacts([
    { id: 'D:1', name: 'hereditary breast cancer syndrome', synonyms: ['breast carcinoma'], parents: [], semanticTypes: [], xrefs: [], altIds: [] },
    { id: 'D:2', name: 'neoplasm', synonyms: [], parents: [], semanticTypes: [], xrefs: [], altIds: [] },
  ]);
  assert.deepEqual(named.names('D:1'), ['hereditary breast cancer syndrome', 'breast carcinoma']);
  assert.deepEqual(named.names('nope'), []);
  const top = { ...cand('D:1', 'dense', 0.8), name: 'hereditary breast cancer syndrome' };
  const x = confidenceFeatures(link('dense', top), 'breast cancer', named);
  // Candidate name: "here", "synd" missing of 4 words; the synonym "breast carcinoma": "carc" ≠ "canc" → 1 of 2 missing.
  assert.equal(get(x, 'best_name_extra'), 0.5);
  assert.equal(get(x, 'dense_name_extra'), 0.5);
  // Trigrams of " breast cancer ": 13; " hereditary breast cancer syndrome ": 33; shared 13 → 13 / 33.
  assert.equal(get(x, 'trigram_similarity'), 13 / 33);
  // " breast carcinoma " has 16 and shares 8 (" br" … "t c", " ca"): 8 / 21 < 13 / 33, so the candidate name stays best.
  assert.equal(get(x, 'best_name_similarity'), 13 / 33);
  const synonymBest = confidenceFeatures(link('dense', top), 'breast carcinomas', named);
  assert.ok(get(synonymBest, 'best_name_similarity') > get(synonymBest, 'trigram_similarity'), 'a closer synonym raises the best similarity');
  assert.equal(get(x, 'has_digit'), 0);
  assert.equal(get(confidenceFeatures(link('dense', top), 'MODY 3', named), 'has_digit'), 1);
  const exact = confidenceFeatures(link('exact', { ...cand('D:1', 'exact', 1), name: 'breast carcinoma' }), 'breast carcinoma', named);
  assert.deepEqual([get(exact, 'best_name_extra'), get(exact, 'dense_name_extra'), get(exact, 'best_name_similarity')], [0, 0, 1], 'the dense-only term stays 0 for a name match');
  // Without facts the candidate's own name is the only one.
  const bare = confidenceFeatures(link('dense', top), 'breast cancer');
  assert.deepEqual([get(bare, 'best_name_extra'), get(bare, 'best_name_similarity'), get(bare, 'family_candidates')], [0.5, 13 / 33, 0]);
});

test('family_candidates: the other candidates that are a parent or child of the top-1', () => {
  const x = confidenceFeatures(link('dense', cand('C:a', 'dense', 0.8), cand('C:b', 'dense', 0.7), cand('C:root', 'dense', 0.6), cand('C:a1', 'dense', 0.5)), 'x', facts);
  assert.equal(get(x, 'family_candidates'), Math.log1p(2), 'root (parent) and a1 (child), not the sibling b');
  assert.equal(get(confidenceFeatures(link('dense', cand('C:b', 'dense', 0.8), cand('C:a1', 'dense', 0.7)), 'x', facts), 'family_candidates'), 0);
});
