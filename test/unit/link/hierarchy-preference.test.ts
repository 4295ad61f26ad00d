import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Concept } from '../../../src/kb/concept.ts';
import { HierarchyPreference } from '../../../src/link/hierarchy-preference.ts';
import { normalizeName } from '../../../src/text/normalize.ts';

const concept = (id: string, name: string, synonyms: string[], parents: string[]): Concept => ({ id, name, synonyms, parents, semanticTypes: [], xrefs: [], altIds: [] });
const concepts = [
  concept('C:child', 'Hereditary polyposis', ['polyposis'], ['C:parent']),
  concept('C:parent', 'Intestinal Polyposis', ['polyposis'], []),
  concept('C:other', 'Polyposis', [], []),
];
const indexOf = (id: string) => concepts.findIndex((c) => c.id === id);
const exact = (i: number) => ({ conceptIndex: i, score: 1, similarity: 1, via: 'exact' as const, exact: true, lexical: true });

test('the concept whose preferred name is the mention comes first, then the ancestor of the others', () => {
  const pref = new HierarchyPreference(concepts, (id) => (indexOf(id) >= 0 ? indexOf(id) : undefined), normalizeName, { penalty: 0.02, preferredName: true, ancestor: true });
  assert.ok(pref.isAncestor(1, 0));
  assert.ok(!pref.isAncestor(0, 1));
  const dense = { conceptIndex: 2, score: 0.8, similarity: 0.8, via: 'dense' as const, exact: false, lexical: false };
  const { hits, scores } = pref.apply(['polyposis'], [exact(0), exact(1), dense]);
  assert.deepEqual(hits.map((h) => h.conceptIndex), [1, 0, 2]);
  assert.deepEqual(scores.map((s) => Number(s.toFixed(2))), [0.98, 0.96, 0.8]);
  const named = pref.apply(['polyposis'], [exact(0), exact(1), exact(2)]);
  assert.equal(named.hits[0]!.conceptIndex, 2);
});

test('a single exact hit or a zero penalty leaves the order alone', () => {
  const off = new HierarchyPreference(concepts, (id) => indexOf(id), normalizeName, { penalty: 0, preferredName: true, ancestor: true });
  assert.deepEqual(off.apply(['polyposis'], [exact(0), exact(1)]).hits.map((h) => h.conceptIndex), [0, 1]);
  const on = new HierarchyPreference(concepts, (id) => indexOf(id), normalizeName, { penalty: 0.02, preferredName: true, ancestor: true });
  assert.deepEqual(on.apply(['polyposis'], [exact(0)]).scores, [1]);
});
