import type { Concept } from '../kb/concept.ts';
import { looksLikeShortForm } from '../text/abbreviation-expansion.ts';
import { addOwner } from './loose-match-table.ts';

/**
 * Names other vocabularies give the KB's concepts through their cross-references (Concept.xrefNames,
 * `--xref-names`), as a lookup consulted only when no KB name matches a mention: DOID calls MeSH's
 * "Kidney Diseases" "nephropathy" and HPO calls "Muscular Atrophy" "muscle wasting". They are
 * another vocabulary's words, so they never outrank the KB's own: a name that is also a KB name
 * (strict key) is left out, and so are short forms ("DM", "AS"), whose sense another vocabulary
 * fixes for its own use. Built when the index opens; nothing is encoded.
 */
export class XrefNameTable {
  private readonly strict = new Map<string, number[]>();
  private readonly loose = new Map<string, number[]>();
  private readonly normalize: (s: string) => string;
  private readonly looseKey: (s: string) => string;

  constructor(concepts: readonly Concept[], isKbName: (name: string) => boolean, normalize: (s: string) => string, looseKey: (s: string) => string) {
    this.normalize = normalize;
    this.looseKey = looseKey;
    concepts.forEach((concept, conceptIndex) => {
      for (const name of concept.xrefNames ?? []) {
        if (looksLikeShortForm(name) || isKbName(name)) continue;
        const strict = normalize(name);
        const loose = looseKey(name);
        if (strict.length > 0) addOwner(this.strict, strict, conceptIndex);
        if (loose.length > 0) addOwner(this.loose, loose, conceptIndex);
      }
    });
  }

  /** Concepts with no names from other vocabularies: the table does nothing. */
  get empty(): boolean {
    return this.strict.size === 0;
  }

  /** Concepts another vocabulary names by this text: under the strict key, else under the loose key. */
  lookup(text: string): readonly number[] {
    const strict = this.strict.get(this.normalize(text));
    if (strict !== undefined) return strict;
    const k = this.looseKey(text);
    return k.length === 0 ? [] : (this.loose.get(k) ?? []);
  }
}

