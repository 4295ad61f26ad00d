import type { LinkIndex } from './link-index.ts';
import type { LooseMatchTable } from './loose-match-table.ts';
import type { XrefNameTable } from './xref-name-table.ts';
import { hereditaryReading } from '../text/loose-key.ts';

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
  /**
   * Second-chance name table (looser key): consulted only when no query text has a strict exact
   * match, then with `headNouns` appended too ("von Hippel-Lindau" + " disease").
   */
  loose?: LooseMatchTable;
  headNouns?: readonly string[];
  /**
   * Names other vocabularies give the KB's concepts (XrefNameTable): consulted only when no KB
   * name matches, strictly or under the loose key, before the head-noun and qualifier chances
   * (tune split: the same links as consulting them before the loose key; after every loose
   * chance, two learn-part mentions fewer).
   */
  xrefNames?: XrefNameTable;
  /**
   * Third chance, after the loose key and head nouns: a name that differs only by qualifier words
   * (LooseMatchTable.lookupUnqualified: "breast-ovarian cancer" → "Hereditary Breast and Ovarian
   * Cancer Syndrome"). Never for a disjunction ("breast or ovarian cancer" names two diseases).
   */
  unqualified?: boolean;
  /**
   * Before the unqualified names: the mention with its mode of inheritance read as "hereditary",
   * loose lookup only ("autosomal recessive disorder" → "Hereditary Diseases"). KB names keep
   * theirs, so "hereditary deafness" never becomes "Deafness, Autosomal Recessive".
   */
  inheritance?: boolean;
  /**
   * Distributed readings of a composite mention: their name matches join the exact block, after
   * the mention's own, only when the whole mention has none (a combined concept wins).
   */
  readings?: readonly string[];
  /**
   * Senses of an undefined short form from an abbreviation inventory: concepts named by them join
   * the dense candidates at the best dense similarity, a tie the reranker breaks.
   */
  senses?: readonly string[];
}

const DISJUNCTION = /\bor\b/i;

/**
 * Roots that stand for a whole ontology: no parent of their own, and at least half of the KB's
 * concepts below them — MEDIC's `MESH:C` "Diseases", HPO's `HP:0000001` "All", DOID's `DOID:4`
 * "disease". They organize the hierarchy; nobody means them by a mention. Kept in the KB (hierarchy,
 * metrics), never returned as candidates. A root over a small branch (a partial hierarchy, a
 * UMLS subset) is a real concept and stays. Applied at retrieval, so no index needs a rebuild.
 */
export function ontologyRoots(concepts: readonly { id: string; parents: readonly string[] }[]): Set<number> {
  const indexOf = new Map<string, number>();
  concepts.forEach((c, i) => indexOf.set(c.id, i));
  const children = new Map<number, number[]>();
  concepts.forEach((c, i) => {
    for (const p of c.parents) {
      const parent = indexOf.get(p);
      if (parent === undefined) continue;
      let list = children.get(parent);
      if (!list) children.set(parent, (list = []));
      list.push(i);
    }
  });
  const half = concepts.length / 2;
  const roots = new Set<number>();
  concepts.forEach((c, i) => {
    if (c.parents.length > 0 || !children.has(i)) return;
    // Counts descendants until half the KB is reached (each root's walk stops there).
    const seen = new Set<number>([i]);
    const queue = [i];
    while (queue.length > 0 && seen.size < half) {
      for (const child of children.get(queue.pop()!) ?? []) {
        if (seen.has(child)) continue;
        seen.add(child);
        queue.push(child);
      }
    }
    if (seen.size >= half) roots.add(i);
  });
  return roots;
}

/**
 * Top-k concepts for one query: exact normalized-name matches first, then dense neighbours from
 * HNSW aggregated per concept (best name wins). Ties break on concept order, so the same index
 * and query always give the same list. Whole-ontology roots are never returned (ontologyRoots).
 */
export class CandidateRetriever {
  private readonly index: LinkIndex;
  private readonly roots: Set<number>;

  constructor(index: LinkIndex) {
    this.index = index;
    this.roots = ontologyRoots(index.concepts);
  }

  retrieve(queryTexts: readonly string[], vector: Float32Array, options: RetrieveOptions): ConceptHit[] {
    const { k, allow } = options;
    const best = new Map<number, ConceptHit>();
    /** Exact tier of each exact hit: the mention's own matches before its readings'. */
    const tier = new Map<number, number>();
    const addExact = (texts: readonly string[], lookup: (t: string) => readonly number[], t: number) => {
      for (const text of texts) {
        for (const conceptIndex of lookup(text)) {
          if (this.roots.has(conceptIndex) || (allow && !allow(conceptIndex)) || best.has(conceptIndex)) continue;
          best.set(conceptIndex, { conceptIndex, score: 1, exact: true });
          tier.set(conceptIndex, t);
        }
      }
    };
    addExact(queryTexts, (t) => this.index.exact.lookup(t), 0);
    const { loose, xrefNames, headNouns, readings } = options;
    if (best.size === 0 && loose) addExact(queryTexts, (t) => loose.lookup(t), 0);
    if (best.size === 0 && xrefNames) addExact(queryTexts, (t) => xrefNames.lookup(t), 0);
    if (best.size === 0 && loose) {
      if (headNouns) addExact(queryTexts.flatMap((q) => headNouns.map((h) => `${q} ${h}`)), (t) => loose.lookup(t), 0);
      if (best.size === 0 && options.inheritance) addExact(queryTexts.flatMap((q) => hereditaryReading(q) ?? []), (t) => loose.lookup(t), 0);
      if (best.size === 0 && options.unqualified && !queryTexts.some((q) => DISJUNCTION.test(q))) addExact(queryTexts, (t) => loose.lookupUnqualified(t), 0);
    }
    if (best.size === 0 && readings && readings.length > 0) {
      readings.forEach((r, i) => {
        addExact([r], (t) => this.index.exact.lookup(t), 1 + i);
        if (loose) addExact([r], (t) => loose.lookup(t), 1 + i);
      });
    }
    const fetch = Math.max(k * (options.namesPerConcept ?? 4), 32);
    const conceptIndexOf = this.index.names.conceptIndexOf;
    const neighbors = this.index.hnsw.search(vector, fetch, allow ? (label) => allow(conceptIndexOf[label]!) : undefined);
    const dense = new Map<number, number>();
    for (const { label, similarity } of neighbors) {
      const conceptIndex = conceptIndexOf[label]!;
      // Dropped after the search rather than filtered inside it: a handful of roots, and a JS callback per visited node is not free.
      if (this.roots.has(conceptIndex)) continue;
      const previous = dense.get(conceptIndex);
      if (previous === undefined || similarity > previous) dense.set(conceptIndex, similarity);
    }
    for (const [conceptIndex, similarity] of dense) {
      if (!best.has(conceptIndex)) best.set(conceptIndex, { conceptIndex, score: similarity, exact: false });
    }
    if (options.senses && options.senses.length > 0 && ![...best.values()].some((h) => h.exact)) {
      const top = Math.max(0, ...dense.values());
      for (const sense of options.senses) {
        const owners = [...this.index.exact.lookup(sense), ...(loose ? loose.lookup(sense) : [])];
        for (const conceptIndex of owners) {
          if ((allow && !allow(conceptIndex)) || (dense.get(conceptIndex) ?? 0) >= top) continue;
          best.set(conceptIndex, { conceptIndex, score: top, exact: false });
          dense.set(conceptIndex, top);
        }
      }
    }
    const hits = [...best.values()];
    hits.sort((a, b) => Number(b.exact) - Number(a.exact) || (tier.get(a.conceptIndex) ?? 0) - (tier.get(b.conceptIndex) ?? 0) || (dense.get(b.conceptIndex) ?? b.score) - (dense.get(a.conceptIndex) ?? a.score) || a.conceptIndex - b.conceptIndex);
    return hits.slice(0, k);
  }
}
