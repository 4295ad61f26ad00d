import type { Concept } from '../kb/concept.ts';
import type { ConceptHit } from '../retrieve/candidate-retriever.ts';

/**
 * Breaks ties between several exact name matches with the ontology instead of embedding order:
 * a concept whose preferred name is the mention beats one that only lists it as a synonym, and
 * a concept that is an ancestor of another tied candidate beats its descendant (the mention
 * names both, and nothing in it narrows to the child). Each unmet preference lowers the hit's
 * score by `penalty`, so a cross-encoder that is confident enough can still overturn it (the
 * fusion sees the ontology as a feature, not as a hard rule).
 */
export interface HierarchyPreferenceOptions {
  penalty: number;
  preferredName: boolean;
  ancestor: boolean;
}

const MAX_UP = 6;

export class HierarchyPreference {
  private readonly concepts: readonly Concept[];
  private readonly indexOf: (id: string) => number | undefined;
  private readonly normalize: (s: string) => string;
  private readonly options: HierarchyPreferenceOptions;

  constructor(concepts: readonly Concept[], indexOf: (id: string) => number | undefined, normalize: (s: string) => string, options: HierarchyPreferenceOptions) {
    this.concepts = concepts;
    this.indexOf = indexOf;
    this.normalize = normalize;
    this.options = options;
  }

  /** True when `ancestor` lies above `conceptIndex` within MAX_UP is-a links. */
  isAncestor(ancestor: number, conceptIndex: number): boolean {
    let frontier = [conceptIndex];
    const seen = new Set<number>(frontier);
    for (let depth = 0; depth < MAX_UP && frontier.length > 0; depth++) {
      const next: number[] = [];
      for (const c of frontier) {
        for (const p of this.concepts[c]!.parents) {
          const pi = this.indexOf(p);
          if (pi === undefined || seen.has(pi)) continue;
          if (pi === ancestor) return true;
          seen.add(pi);
          next.push(pi);
        }
      }
      frontier = next;
    }
    return false;
  }

  /** Reorders the leading block of name-lookup hits; returns the hits and their (penalized) scores. */
  apply(mentionTexts: readonly string[], hits: ConceptHit[]): { hits: ConceptHit[]; scores: number[] } {
    const { penalty, preferredName, ancestor } = this.options;
    let n = 0;
    while (n < hits.length && hits[n]!.lexical) n++;
    if (n < 2 || penalty <= 0 || (!preferredName && !ancestor)) return { hits, scores: hits.map((h) => h.score) };
    const keys = new Set(mentionTexts.map((t) => this.normalize(t)));
    const head = hits.slice(0, n).map((hit, order) => {
      let unmet = 0;
      if (preferredName && !keys.has(this.normalize(this.concepts[hit.conceptIndex]!.name))) unmet++;
      if (ancestor && hits.slice(0, n).some((other) => other !== hit && this.isAncestor(other.conceptIndex, hit.conceptIndex))) unmet++;
      return { hit, order, score: hit.score - penalty * unmet };
    });
    head.sort((a, b) => b.score - a.score || a.order - b.order);
    const tail = hits.slice(n);
    return { hits: [...head.map((h) => h.hit), ...tail], scores: [...head.map((h) => h.score), ...tail.map((h) => h.score)] };
  }
}
