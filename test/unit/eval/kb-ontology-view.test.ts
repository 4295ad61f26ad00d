import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadKb } from '../../../src/kb/load.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { fixtureOntology } from './fixture-ontology.ts';
import { gradedNdcg, idealDcg } from '../../../src/eval/metrics/graded-relevance.ts';
import { ConceptStore } from '../../../src/kb/concept-store.ts';
import type { Concept } from '../../../src/kb/concept.ts';

const IDS = ['R', 'A', 'B', 'A1', 'A2', 'B1', 'A1a', 'A1b', 'X'].map((x) => `FIX:${x}`);

// The metric tests use distances drawn by hand; this checks src/kb's hierarchy agrees with the drawing.
test('KB view over the fixture hierarchy gives the hand-drawn distances, neighbourhoods and alt-id matches', async () => {
  const store = await loadKb(['test/fixtures/eval/hierarchy.jsonl'], { format: 'jsonl' });
  const view = kbOntologyView(store);
  for (const a of IDS) {
    assert.deepEqual(view.neighbourhoodSizes(a), fixtureOntology.neighbourhoodSizes(a), `neighbourhood of ${a}`);
    assert.deepEqual(view.semanticTypes(a), fixtureOntology.semanticTypes(a));
    for (const b of IDS) assert.equal(view.pathLength(a, b), fixtureOntology.pathLength(a, b), `${a} – ${b}`);
  }
  assert.equal(view.resolve('ALT:A1'), 'FIX:A1');
  assert.equal(view.resolve('MESH:D999999'), undefined);
  assert.ok(view.matches('FIX:A1', 'ALT:A1'));
  assert.ok(!view.matches('FIX:A1a', 'ALT:A1'));
});

// CTD lists one DOID id under several diseases: K:C1 and K:C2 both claim DOID:1 (K:C1, the smaller
// id, wins the lookup). Drawing: K:P is the parent of both, so K:C1 and K:C2 are siblings (d 2).
// Ranking [K:C1, K:C2, K:P] for gold DOID:1: gains [3, 3 (matches DOID:1 too), 2 (parent of K:C1)]
//   DCG = 3 + 3/log2 3 + 2/log2 4 = 3 + 1.8927893 + 1 = 5.8927893.
// Before the fix the ideal counted one exact concept, K:C2 as K:C1's sibling: [3, 2, 1]
//   = 3 + 1.2618595 + 0.5 = 4.7618595 → nDCG 1.2375 > 1. The ideal is every concept at its best
//   grade: [3, 3, 2] = 5.8927893 → nDCG 1.
test('nDCG@5 of a gold alt id that several concepts list never exceeds 1', () => {
  const concept = (id: string, parents: string[], altIds: string[]): Concept => ({ id, name: id, synonyms: [], semanticTypes: [], parents, xrefs: [], altIds });
  const view = kbOntologyView(ConceptStore.from([concept('K:P', [], []), concept('K:C2', ['K:P'], ['DOID:1']), concept('K:C1', ['K:P'], ['DOID:1'])]));
  const close = (actual: number, expected: number, what: string): void => assert.ok(Math.abs(actual - expected) < 1e-6, `${what}: ${actual} ≠ ${expected}`);
  close(idealDcg('DOID:1', view, 5), 5.8927893, 'ideal of the shared alt id');
  close(gradedNdcg(['K:C1', 'K:C2', 'K:P'], ['DOID:1'], view, 5), 1, 'both claimants, then the parent');
  // An ordinary gold keeps its ideal: K:C1 alone exact, K:P at d 1, K:C2 at d 2 → [3, 2, 1] = 4.7618595.
  close(idealDcg('K:C1', view, 5), 4.7618595, 'ideal of a primary id');
  close(gradedNdcg(['K:C1', 'K:P', 'K:C2'], ['K:C1'], view, 5), 1, 'primary gold, ideal order');
});
