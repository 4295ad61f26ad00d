import type { Concept } from '../kb/concept.ts';

/**
 * Every name of every concept, one row per vector in the HNSW index: the vector label is the
 * row number, and the row says which concept it belongs to. Names that normalize to the same
 * string within one concept are kept once, so a concept's case variants cost one vector.
 */
export class NameTable {
  readonly names: string[];
  /** conceptIndexOf[label] = index into the concept array. */
  readonly conceptIndexOf: Int32Array;

  constructor(names: string[], conceptIndexOf: Int32Array) {
    if (names.length !== conceptIndexOf.length) throw new Error('name table: names and concept indices differ in length');
    this.names = names;
    this.conceptIndexOf = conceptIndexOf;
  }

  static fromConcepts(concepts: readonly Concept[], normalize: (s: string) => string): NameTable {
    const names: string[] = [];
    const owners: number[] = [];
    concepts.forEach((concept, conceptIndex) => {
      const seen = new Set<string>();
      for (const name of [concept.name, ...concept.synonyms]) {
        const key = normalize(name);
        if (key.length === 0 || seen.has(key)) continue;
        seen.add(key);
        names.push(name);
        owners.push(conceptIndex);
      }
    });
    return new NameTable(names, Int32Array.from(owners));
  }

  get size(): number {
    return this.names.length;
  }
}
