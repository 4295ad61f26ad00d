import type { OntologyView } from './ontology-view.ts';

/**
 * Graded relevance after Triplet-BERT (Ngo et al., "Semantic Search for Large Scale Clinical
 * Ontologies"), as issue #5 words it: 3 for the gold concept, 2 for a parent or child, 1 for a
 * grandparent, grandchild or sibling, 0 otherwise. Through the least common ancestor those are
 * exactly path lengths 0, 1 and 2 (a sibling is 1 + 1, a grandparent 2 + 0); an uncle (2 + 1),
 * which the paper also gives 1, is 0 here.
 */
export function gradedRelevance(predictedId: string, goldId: string, view: OntologyView): number {
  if (view.matches(predictedId, goldId)) return 3;
  const predicted = view.resolve(predictedId);
  const gold = view.resolve(goldId);
  if (predicted === undefined || gold === undefined) return 0;
  const d = predicted === gold ? 0 : view.pathLength(predicted, gold);
  if (d === undefined) return 0;
  return d === 0 ? 3 : d === 1 ? 2 : d === 2 ? 1 : 0;
}

/** Σ rel_i / log2(i + 1), i from 1: linear gains, the usual discount. */
export function dcg(relevances: readonly number[]): number {
  let sum = 0;
  relevances.forEach((rel, i) => {
    sum += rel / Math.log2(i + 2);
  });
  return sum;
}

/**
 * The best DCG any ranking of k concepts from the KB could reach for this gold id (primary or
 * alt): every concept it matches, then the parents and children of the concept it resolves to,
 * then grandparents, grandchildren and siblings. Normalizing by the KB's ideal (not by the
 * returned list re-sorted, which is how the paper's 0.976 example comes about) keeps the metric
 * monotone: adding an unrelated candidate never raises the score.
 */
export function idealDcg(goldId: string, view: OntologyView, k: number): number {
  const [gold, ...otherExact] = view.conceptsMatching(goldId);
  if (gold === undefined) return 0;
  let { atOne, atTwo } = view.neighbourhoodSizes(gold);
  // Another concept listing the gold as an alt id gains 3 in a ranking, so the ideal must hold it
  // at 3 too (else nDCG exceeds 1), and not again at its distance from the gold's concept.
  for (const other of otherExact) {
    const d = view.pathLength(other, gold);
    if (d === 1) atOne--;
    else if (d === 2) atTwo--;
  }
  const ideal = [3];
  for (let i = 0; i < otherExact.length && ideal.length < k; i++) ideal.push(3);
  for (let i = 0; i < atOne && ideal.length < k; i++) ideal.push(2);
  for (let i = 0; i < atTwo && ideal.length < k; i++) ideal.push(1);
  return dcg(ideal);
}

/**
 * Graded nDCG@k of a ranked list against a (possibly composite) gold: the best over the gold ids
 * the KB holds, since any one of them is an acceptable answer. 0 when the KB holds none.
 */
export function gradedNdcg(predicted: readonly string[], goldIds: readonly string[], view: OntologyView, k: number): number {
  const top = predicted.slice(0, k);
  let best = 0;
  // A repeated id scores what it scored the first time: each costs k relevances and an ideal.
  for (const goldId of new Set(goldIds)) {
    const gold = view.resolve(goldId);
    if (gold === undefined) continue;
    const value = dcg(top.map((p) => gradedRelevance(p, goldId, view))) / idealDcg(goldId, view, k);
    if (value > best) best = value;
  }
  return best;
}
