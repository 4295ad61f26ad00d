import type { LinkIndex } from './link-index.ts';

export interface ConceptHit {
  conceptIndex: number;
  /** Cosine similarity of the best-matching name; 1 for exact matches. */
  score: number;
  exact: boolean;
}

export interface RetrieveOptions {
  /** Concepts to return. */
  k: number;
  /** Name vectors to fetch per concept wanted: several names of one concept often crowd the top. */
  namesPerConcept?: number;
  /** Keep only concepts for which this returns true (semantic-type filter). */
  allow?: (conceptIndex: number) => boolean;
}

/**
 * Top-k concepts for one query: exact normalized-name matches first, then dense neighbours from
 * HNSW aggregated per concept (best name wins). Ties break on concept order, so the same index
 * and query always give the same list.
 */
export class CandidateRetriever {
  private readonly index: LinkIndex;

  constructor(index: LinkIndex) {
    this.index = index;
  }

  retrieve(queryTexts: readonly string[], vector: Float32Array, options: RetrieveOptions): ConceptHit[] {
    const { k, allow } = options;
    const best = new Map<number, ConceptHit>();
    for (const text of queryTexts) {
      for (const conceptIndex of this.index.exact.lookup(text)) {
        if (allow && !allow(conceptIndex)) continue;
        best.set(conceptIndex, { conceptIndex, score: 1, exact: true });
      }
    }
    const fetch = Math.max(k * (options.namesPerConcept ?? 4), 32);
    const conceptIndexOf = this.index.names.conceptIndexOf;
    const neighbors = this.index.hnsw.search(vector, fetch, allow ? (label) => allow(conceptIndexOf[label]!) : undefined);
    const dense = new Map<number, number>();
    for (const { label, similarity } of neighbors) {
      const conceptIndex = conceptIndexOf[label]!;
      const previous = dense.get(conceptIndex);
      if (previous === undefined || similarity > previous) dense.set(conceptIndex, similarity);
    }
    for (const [conceptIndex, similarity] of dense) {
      if (!best.has(conceptIndex)) best.set(conceptIndex, { conceptIndex, score: similarity, exact: false });
    }
    const hits = [...best.values()];
    hits.sort((a, b) => Number(b.exact) - Number(a.exact) || (dense.get(b.conceptIndex) ?? b.score) - (dense.get(a.conceptIndex) ?? a.score) || a.conceptIndex - b.conceptIndex);
    return hits.slice(0, k);
  }
}
