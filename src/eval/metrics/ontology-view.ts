/**
 * What the metrics need to know about the KB, and nothing more: which ids it holds, which ids a
 * concept also answers to, and how far apart two concepts are in the hierarchy. Kept as an
 * interface so the metrics stay pure functions; `kb-ontology-view.ts` implements it over
 * src/kb's ConceptStore and hierarchy.
 */
export interface OntologyView {
  /** Primary id of the concept that `id` (primary or alternative id) denotes; undefined when the KB lacks it. */
  resolve(id: string): string | undefined;
  /**
   * True when the predicted concept matches the gold id: the predicted id, or one of that
   * concept's alternative ids, equals the gold id (the evaluation protocol's rule).
   */
  matches(predictedId: string, goldId: string): boolean;
  /**
   * Every gold id `matches(predictedId, ·)` accepts, so a caller can test a prediction against a
   * whole gold label with one Set lookup per id named here instead of one `matches` per gold id
   * (the gold topic is anyone's to write). May repeat an id.
   */
  idsMatchedBy(predictedId: string): readonly string[];
  /**
   * Number of is-a links on the shortest path between two primary ids through a common ancestor
   * (the least common ancestor for that pair): 0 for the same concept, 1 parent/child,
   * 2 grandparent/grandchild/sibling. Undefined when they share no ancestor.
   */
  pathLength(a: string, b: string): number | undefined;
  /**
   * How many other concepts lie at path length exactly 1 and exactly 2 from this primary id: what
   * the ideal ranking for graded nDCG can draw on.
   */
  neighbourhoodSizes(id: string): { atOne: number; atTwo: number };
  /**
   * Primary ids of every concept that `matches` this gold id: the one it resolves to, then any
   * other concept listing it as an alt id (CTD lists one DOID id under several diseases). Empty
   * when the KB lacks it.
   */
  conceptsMatching(goldId: string): readonly string[];
  /** Semantic types of a primary id. */
  semanticTypes(id: string): readonly string[];
}
