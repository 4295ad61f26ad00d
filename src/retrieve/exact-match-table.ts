import type { Concept } from '../kb/concept.ts';

/**
 * Normalized name → concepts that carry that name. Exact matches are ranked before any dense
 * candidate: on biomedical corpora a verbatim dictionary hit is right far more often than the
 * nearest embedding, and it costs a hash lookup.
 */
export class ExactMatchTable {
  private readonly table: Map<string, number[]>;
  readonly normalize: (s: string) => string;

  private constructor(table: Map<string, number[]>, normalize: (s: string) => string) {
    this.table = table;
    this.normalize = normalize;
  }

  static fromConcepts(concepts: readonly Concept[], normalize: (s: string) => string): ExactMatchTable {
    const table = new Map<string, number[]>();
    concepts.forEach((concept, conceptIndex) => {
      for (const name of [concept.name, ...concept.synonyms]) {
        const key = normalize(name);
        if (key.length === 0) continue;
        const owners = table.get(key);
        if (owners === undefined) table.set(key, [conceptIndex]);
        else if (owners[owners.length - 1] !== conceptIndex) owners.push(conceptIndex);
      }
    });
    return new ExactMatchTable(table, normalize);
  }

  /** Concept indices whose name normalizes to the same string as `text`, in KB order. */
  lookup(text: string): readonly number[] {
    return this.table.get(this.normalize(text)) ?? [];
  }

  get size(): number {
    return this.table.size;
  }
}
