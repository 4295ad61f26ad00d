import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Concept } from '../../../src/kb/concept.ts';
import { SparseFusion } from '../../../src/retrieve/sparse-fusion.ts';
import { AbbreviationInventory } from '../../../src/text/abbreviation-inventory.ts';
import { normalizeName } from '../../../src/text/normalize.ts';

const concept = (id: string, name: string, synonyms: string[] = []): Concept => ({ id, name, synonyms, parents: [], semanticTypes: [], xrefs: [], altIds: [] });
const concepts = [concept('C:1', 'Cholesteryl Ester Transfer Protein Deficiency'), concept('C:2', 'Hyperalphalipoproteinemia 1', ['HALP1']), concept('C:3', 'Polyposis')];

test('sparse fusion lifts the candidate that shares the spelling, keeps name-lookup hits (exact or looser) first', () => {
  const fusion = new SparseFusion(concepts, normalizeName, 0.3);
  const hits = [
    { conceptIndex: 2, score: 1, similarity: 0.9, via: 'loose' as const, exact: false, lexical: true },
    { conceptIndex: 0, score: 0.8, similarity: 0.8, via: 'dense' as const, exact: false, lexical: false },
    { conceptIndex: 1, score: 0.75, similarity: 0.75, via: 'dense' as const, exact: false, lexical: false },
  ];
  const fused = fusion.fuse(['hyperalphalipoproteinemic'], hits);
  assert.deepEqual(fused.map((h) => h.conceptIndex), [2, 1, 0]);
  assert.equal(fused[0]!.score, 1);
  assert.ok(fused[1]!.score > 0.7 * 0.75);
  // λ = 0: the dense order stands.
  assert.deepEqual(new SparseFusion(concepts, normalizeName, 0).fuse(['hyperalphalipoproteinemic'], hits).map((h) => h.conceptIndex), [2, 0, 1]);
});

test('the shipped abbreviation inventory loads and lists senses most frequent first', () => {
  const inventory = AbbreviationInventory.load('models/default/abbreviations/clinical-senses.tsv');
  assert.ok(inventory.size > 1000);
  assert.equal(inventory.lookup('DM')[0], 'diabetes mellitus');
  assert.deepEqual(inventory.lookup('not-an-abbreviation'), []);
});
