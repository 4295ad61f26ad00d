import type { Concept } from '../kb/concept.ts';

/**
 * The second-chance exact table: every KB name under a looser key (src/text/loose-key.ts). Built
 * from the index's concepts when the index opens (~75k names: well under a second), so no index
 * rebuild is needed and the strict table stays what the index manifest describes.
 */
export class LooseMatchTable {
  private readonly table = new Map<string, number[]>();
  readonly key: (s: string) => string;

  constructor(concepts: readonly Concept[], key: (s: string) => string) {
    this.key = key;
    concepts.forEach((concept, conceptIndex) => {
      for (const name of [concept.name, ...concept.synonyms]) {
        const k = key(name);
        if (k.length === 0) continue;
        const owners = this.table.get(k);
        if (owners === undefined) this.table.set(k, [conceptIndex]);
        else if (owners[owners.length - 1] !== conceptIndex) owners.push(conceptIndex);
      }
    });
  }

  lookup(text: string): readonly number[] {
    const k = this.key(text);
    return k.length === 0 ? [] : (this.table.get(k) ?? []);
  }
}
