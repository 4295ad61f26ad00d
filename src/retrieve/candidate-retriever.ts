import type { LinkIndex } from './link-index.ts';

/**
 * The stage that put a candidate on a mention's list (its provenance, `via` in the output). The
 * name lookups come first, in the order src/link/linking-stages.ts declares; `exact` alone means
 * the mention's own text is a name of the concept (after normalizeName).
 */
export type CandidateSource = 'exact' | 'abbreviation' | 'loose' | 'xref' | 'head-noun' | 'inheritance' | 'unqualified' | 'composite' | 'inventory' | 'memory' | 'dense';

export interface ConceptHit {
  conceptIndex: number;
  /**
   * Ranking score within the list: 1 for a name-lookup hit (the lookup tier outranks every dense
   * hit), the cosine similarity (after sparse fusion) for the others. Never an output field as is.
   */
  score: number;
  /** Cosine similarity of the mention's vector to the concept's nearest name vector (1 for an exact name). */
  similarity: number;
  via: CandidateSource;
  /** The mention's own text is a KB name of the concept: every `exact` hit, and an `abbreviation` hit whose short form is one too ("MI"). */
  exact: boolean;
  /** Found by a name lookup (exact or looser): ranks before every dense hit. */
  lexical: boolean;
  /** The cross-encoder's probability for the pair, when it scored it. */
  rerankProbability?: number;
}

/**
 * One name-lookup stage of the cascade (built in order by src/link/linking-stages.ts): the texts
 * it looks up for the mention's query texts, and how. The first stage with a hit ends the cascade.
 */
export interface NameLookup {
  via: CandidateSource;
  texts?: (queryTexts: readonly string[]) => readonly string[];
  lookup: (text: string) => readonly number[];
}

export interface RetrieveOptions {
  /** Concepts to return. */
  k: number;
  /** Name vectors to fetch per concept wanted: several names of one concept often crowd the top. */
  namesPerConcept?: number;
  /** Keep only concepts for which this returns true (semantic-type filter). */
  allow?: (conceptIndex: number) => boolean;
  /**
   * The name lookups after the exact table, in cascade order; each is consulted only while no
   * earlier one matched (src/link/linking-stages.ts).
   */
  lookups?: readonly NameLookup[];
  /** `queryTexts[0]` is an in-note abbreviation's long form, not the mention's own text: its exact hits are `abbreviation`. */
  expanded?: boolean;
  /**
   * Distributed readings of a composite mention and how to look each up: their name matches join
   * the lexical block, after the mention's own, only when the whole mention has none (a combined
   * concept wins).
   */
  readings?: readonly string[];
  readingLookups?: readonly ((text: string) => readonly number[])[];
  /**
   * Senses of an undefined short form from an abbreviation inventory and their name lookups:
   * concepts named by them join the dense candidates at the best dense similarity, a tie the
   * reranker breaks.
   */
  senses?: readonly string[];
  senseLookups?: readonly ((text: string) => readonly number[])[];
}

/**
 * Roots that stand for a whole ontology: no parent of their own, and at least half of the KB's
 * concepts below them — MEDIC's `MESH:C` "Diseases", HPO's `HP:0000001` "All", DOID's `DOID:4`
 * "disease". They organize the hierarchy; nobody means them by a mention. Kept in the KB (hierarchy,
 * metrics), never returned as candidates. A root over a small branch (a partial hierarchy, a
 * UMLS subset) is a real concept and stays. Applied at retrieval, so no index needs a rebuild.
 */
export function ontologyRoots(concepts: readonly { id: string; parents: readonly string[] }[]): Set<number> {
  let roots = rootsOf.get(concepts);
  if (roots === undefined) rootsOf.set(concepts, (roots = findOntologyRoots(concepts)));
  return roots;
}

/** One computation per concept list: the retriever and the exact-name vectors both need the roots. */
const rootsOf = new WeakMap<readonly object[], Set<number>>();

function findOntologyRoots(concepts: readonly { id: string; parents: readonly string[] }[]): Set<number> {
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
  private firstLabel: Int32Array | undefined;

  constructor(index: LinkIndex) {
    this.index = index;
    this.roots = ontologyRoots(index.concepts);
  }

  retrieve(queryTexts: readonly string[], vector: Float32Array, options: RetrieveOptions): ConceptHit[] {
    const { k, allow } = options;
    const best = new Map<number, ConceptHit>();
    /** Lexical tier of each name hit: the mention's own matches before its readings'. */
    const tier = new Map<number, number>();
    const addNamed = (texts: readonly string[], lookup: (t: string) => readonly number[], t: number, via: (textIndex: number) => CandidateSource) => {
      texts.forEach((text, textIndex) => {
        for (const conceptIndex of lookup(text)) {
          if (this.roots.has(conceptIndex) || (allow && !allow(conceptIndex))) continue;
          const source = via(textIndex);
          const known = best.get(conceptIndex);
          // Reached through an in-note long form first, and the mention's own text ("MI") is a KB name of it too: exact.
          if (known !== undefined) {
            if (source === 'exact') known.exact = true;
            continue;
          }
          const exact = source === 'exact';
          // An in-note long form that is a KB name matched it exactly: similarity 1, whichever vector the mention got (encoded or the name's stored one).
          best.set(conceptIndex, { conceptIndex, score: 1, similarity: exact || source === 'abbreviation' ? 1 : NaN, via: source, exact, lexical: true });
          tier.set(conceptIndex, t);
        }
      });
    };
    addNamed(queryTexts, (t) => this.index.exact.lookup(t), 0, (i) => (options.expanded && i === 0 ? 'abbreviation' : 'exact'));
    for (const stage of options.lookups ?? []) {
      if (best.size > 0) break;
      addNamed(stage.texts ? stage.texts(queryTexts) : queryTexts, stage.lookup, 0, () => stage.via);
    }
    const { readings, readingLookups } = options;
    if (best.size === 0 && readings && readingLookups) {
      readings.forEach((r, i) => {
        for (const lookup of readingLookups) addNamed([r], lookup, 1 + i, () => 'composite');
      });
    }
    let fetch = Math.max(k * (options.namesPerConcept ?? 4), 32);
    const conceptIndexOf = this.index.names.conceptIndexOf;
    const filter = allow ? (label: number) => allow(conceptIndexOf[label]!) : undefined;
    const dense = new Map<number, number>();
    for (;;) {
      const neighbors = this.index.hnsw.search(vector, fetch, filter);
      dense.clear();
      for (const { label, similarity } of neighbors) {
        const conceptIndex = conceptIndexOf[label]!;
        // Dropped after the search rather than filtered inside it: a handful of roots, and a JS callback per visited node is not free.
        if (this.roots.has(conceptIndex)) continue;
        const previous = dense.get(conceptIndex);
        if (previous === undefined || similarity > previous) dense.set(conceptIndex, similarity);
      }
      // The names of a few concepts can fill the whole fetch (one with 40 synonyms near the query):
      // fetch more until the list has k concepts or the search has no more names to give.
      let concepts = best.size;
      for (const conceptIndex of dense.keys()) if (!best.has(conceptIndex)) concepts++;
      if (concepts >= k || neighbors.length < fetch || fetch >= this.index.hnsw.size) break;
      fetch *= 2;
    }
    for (const [conceptIndex, similarity] of dense) {
      if (!best.has(conceptIndex)) best.set(conceptIndex, { conceptIndex, score: similarity, similarity, via: 'dense', exact: false, lexical: false });
    }
    if (options.senses && options.senses.length > 0 && ![...best.values()].some((h) => h.lexical)) {
      const top = Math.max(0, ...dense.values());
      for (const sense of options.senses) {
        const owners = (options.senseLookups ?? []).flatMap((lookup) => lookup(sense));
        for (const conceptIndex of owners) {
          if (this.roots.has(conceptIndex) || (allow && !allow(conceptIndex)) || (dense.get(conceptIndex) ?? 0) >= top) continue;
          best.set(conceptIndex, { conceptIndex, score: top, similarity: NaN, via: 'inventory', exact: false, lexical: false });
          dense.set(conceptIndex, top);
        }
      }
    }
    const hits = [...best.values()];
    // A looser match's real similarity: its nearest name's cosine (dense search may not have reached
    // it). Lexical hits need it before the sort: sorted as 1, a name the search missed led those it reached.
    const fill = (hit: ConceptHit) => {
      if (Number.isNaN(hit.similarity)) hit.similarity = dense.get(hit.conceptIndex) ?? this.nearestNameSimilarity(vector, hit.conceptIndex);
    };
    for (const hit of hits) if (hit.lexical) fill(hit);
    const key = (hit: ConceptHit) => dense.get(hit.conceptIndex) ?? (hit.lexical ? hit.similarity : hit.score);
    hits.sort((a, b) => Number(b.lexical) - Number(a.lexical) || (tier.get(a.conceptIndex) ?? 0) - (tier.get(b.conceptIndex) ?? 0) || key(b) - key(a) || a.conceptIndex - b.conceptIndex);
    const out = hits.slice(0, k);
    for (const hit of out) fill(hit);
    return out;
  }

  /** Cosine similarity of a vector to the nearest of a concept's name vectors. */
  nearestNameSimilarity(vector: Float32Array, conceptIndex: number): number {
    let queryNorm = 0;
    for (let i = 0; i < vector.length; i++) queryNorm += vector[i]! * vector[i]!;
    let best = -1;
    for (const label of this.labelsOf(conceptIndex)) {
      const v = this.index.hnsw.vector(label);
      let dot = 0;
      let norm = 0;
      for (let i = 0; i < v.length; i++) {
        dot += v[i]! * vector[i]!;
        norm += v[i]! * v[i]!;
      }
      if (norm > 0 && queryNorm > 0) best = Math.max(best, dot / Math.sqrt(norm * queryNorm));
    }
    return best;
  }

  /** Vector labels of a concept's names (the name table keeps each concept's names together). */
  private labelsOf(conceptIndex: number): number[] {
    if (this.firstLabel === undefined) {
      const owners = this.index.names.conceptIndexOf;
      const first = new Int32Array(this.index.concepts.length + 1).fill(-1);
      for (let label = owners.length - 1; label >= 0; label--) first[owners[label]!] = label;
      this.firstLabel = first;
    }
    const out: number[] = [];
    const owners = this.index.names.conceptIndexOf;
    for (let label = this.firstLabel[conceptIndex]!; label >= 0 && label < owners.length && owners[label] === conceptIndex; label++) out.push(label);
    return out;
  }
}
