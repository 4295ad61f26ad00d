import type { Concept } from '../kb/concept.ts';
import type { ConceptFactsView } from './confidence-features.ts';

/** What the confidence features read of the KB, indexed once when a linker opens. */
export class ConceptFacts implements ConceptFactsView {
  private readonly byId = new Map<string, Concept>();
  private readonly childCount = new Map<string, number>();

  constructor(concepts: readonly Concept[]) {
    for (const c of concepts) {
      this.byId.set(c.id, c);
      for (const p of c.parents) this.childCount.set(p, (this.childCount.get(p) ?? 0) + 1);
    }
  }

  synonyms(id: string): number {
    return this.byId.get(id)?.synonyms.length ?? 0;
  }

  children(id: string): number {
    return this.childCount.get(id) ?? 0;
  }

  names(id: string): readonly string[] {
    const concept = this.byId.get(id);
    return concept ? [concept.name, ...concept.synonyms] : [];
  }

  isParent(parent: string, child: string): boolean {
    return this.byId.get(child)?.parents.includes(parent) ?? false;
  }
}
