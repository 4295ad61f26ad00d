import type { OntologyView } from '../../../src/eval/metrics/ontology-view.ts';

/**
 * The fixture hierarchy of test/fixtures/eval/hierarchy.jsonl, with distances written by hand
 * from this drawing (not computed), so the metric tests do not depend on any hierarchy code:
 *
 *              FIX:R                 FIX:X (separate root)
 *             /     \
 *        FIX:A       FIX:B
 *        /   \          \
 *   FIX:A1   FIX:A2    FIX:B1
 *    /   \
 * FIX:A1a FIX:A1b
 *
 * FIX:A1 also answers to ALT:A1. Semantic types: A branch and R T047, B branch T191, X T033.
 */
const DISTANCES: Record<string, number> = {
  'A1|A1a': 1, 'A1|A1b': 1, 'A1|A': 1, 'A1|A2': 2, 'A1|R': 2, 'A1|B': 3, 'A1|B1': 4,
  'A1a|A1b': 2, 'A1a|A': 2, 'A1a|A2': 3, 'A1a|R': 3, 'A1a|B': 4, 'A1a|B1': 5,
  'A1b|A': 2, 'A1b|A2': 3, 'A1b|R': 3, 'A1b|B': 4, 'A1b|B1': 5,
  'A|A2': 1, 'A|R': 1, 'A|B': 2, 'A|B1': 3,
  'A2|R': 2, 'A2|B': 3, 'A2|B1': 4,
  'B|R': 1, 'B|B1': 1, 'B1|R': 2,
};

/** [concepts at path length 1, at path length 2], by hand from the drawing. */
const NEIGHBOURHOODS: Record<string, [number, number]> = {
  R: [2, 3], // A, B | A1, A2, B1 (grandchildren)
  A: [3, 3], // R, A1, A2 | B (sibling), A1a, A1b (grandchildren)
  B: [2, 1], // R, B1 | A (sibling)
  A1: [3, 2], // A, A1a, A1b | R (grandparent), A2 (sibling)
  A2: [1, 2], // A | R (grandparent), A1 (sibling)
  B1: [1, 1], // B | R (grandparent)
  A1a: [1, 2], // A1 | A (grandparent), A1b (sibling)
  A1b: [1, 2], // A1 | A (grandparent), A1a (sibling)
  X: [0, 0],
};

const TYPES: Record<string, string[]> = { R: ['T047'], A: ['T047'], A1: ['T047'], A2: ['T047'], A1a: ['T047'], A1b: ['T047'], B: ['T191'], B1: ['T191'], X: ['T033'] };

const local = (id: string): string => id.replace(/^FIX:/, '');

export const fixtureOntology: OntologyView = {
  resolve(id) {
    if (id === 'ALT:A1') return 'FIX:A1';
    return id.startsWith('FIX:') && local(id) in TYPES ? id : undefined;
  },
  matches(predictedId, goldId) {
    return predictedId === goldId || (predictedId === 'FIX:A1' && goldId === 'ALT:A1');
  },
  idsMatchedBy(predictedId) {
    return predictedId === 'FIX:A1' ? [predictedId, 'ALT:A1'] : [predictedId];
  },
  pathLength(a, b) {
    if (a === b) return 0;
    return DISTANCES[`${local(a)}|${local(b)}`] ?? DISTANCES[`${local(b)}|${local(a)}`];
  },
  neighbourhoodSizes(id) {
    const [atOne, atTwo] = NEIGHBOURHOODS[local(id)] ?? [0, 0];
    return { atOne, atTwo };
  },
  conceptsMatching(goldId) {
    const gold = this.resolve(goldId);
    return gold === undefined ? [] : [gold];
  },
  semanticTypes(id) {
    return TYPES[local(id)] ?? [];
  },
};
