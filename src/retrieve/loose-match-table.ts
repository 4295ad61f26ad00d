import type { Concept } from '../kb/concept.ts';

/**
 * The second-chance exact table: every KB name under a looser key (src/text/loose-key.ts). Built
 * from the index's concepts when the index opens (~75k names: well under a second), so no index
 * rebuild is needed and the strict table stays what the index manifest describes.
 */
export class LooseMatchTable {
  private readonly table = new Map<string, number[]>();
  /** Names that carry qualifier words, under their key without them (`unqualifiedKey`). */
  private readonly unqualified = new Map<string, number[]>();
  readonly key: (s: string) => string;
  private readonly unqualify: ((s: string) => string) | undefined;

  constructor(concepts: readonly Concept[], key: (s: string) => string, unqualifiedKey?: (s: string) => string) {
    this.key = key;
    this.unqualify = unqualifiedKey;
    concepts.forEach((concept, conceptIndex) => {
      for (const name of [concept.name, ...concept.synonyms]) {
        const k = key(name);
        if (k.length === 0) continue;
        addOwner(this.table, k, conceptIndex);
        const bare = unqualifiedKey?.(name);
        if (bare !== undefined && bare.length > 0 && bare !== k) addOwner(this.unqualified, bare, conceptIndex);
      }
    });
  }

  lookup(text: string): readonly number[] {
    const k = this.key(text);
    return k.length === 0 ? [] : (this.table.get(k) ?? []);
  }

  /**
   * Concepts with a qualified name ("Hereditary …", "… Syndrome") whose other words are exactly
   * the text's, qualifiers of the text dropped too; empty without an unqualifiedKey.
   */
  lookupUnqualified(text: string): readonly number[] {
    const k = this.unqualify?.(text) ?? '';
    return k.length === 0 ? [] : (this.unqualified.get(k) ?? []);
  }
}

/** Adds a concept to a key's owners (each concept once; names arrive grouped by concept). */
export function addOwner(table: Map<string, number[]>, key: string, conceptIndex: number): void {
  const owners = table.get(key);
  if (owners === undefined) table.set(key, [conceptIndex]);
  else if (owners[owners.length - 1] !== conceptIndex) owners.push(conceptIndex);
}
