/**
 * The one concept model every loader produces and every later stage reads.
 * Serialized one concept per line by `cuilink kb export --format jsonl` (see docs/kb-jsonl.md);
 * the Python training pipeline in models/ reads exactly that.
 */
export interface Concept {
  /** Prefixed id: `MESH:D005955`, `HP:0001250`, `UMLS:C0011849`, `DOID:9352`, `OMIM:601665`. */
  id: string;
  /** Preferred name. */
  name: string;
  /** Other names (never repeats `name`; order kept from the source, duplicates removed). */
  synonyms: string[];
  /** Semantic types or categories (UMLS TUIs such as `T047`, or source categories). */
  semanticTypes: string[];
  /** Prefixed ids of direct parents (is_a / PAR / RB, as the source has it). */
  parents: string[];
  /** Cross-references to other vocabularies, prefixed. */
  xrefs: string[];
  /** Other ids that denote this same concept in this KB (CTD AltDiseaseIDs, OBO alt_id): a gold id equal to one is a hit. */
  altIds: string[];
  /**
   * Names other vocabularies give this concept through their cross-references (`--xref-names`):
   * looked up only when no KB name matches a mention, never encoded, never a KB synonym.
   */
  xrefNames?: string[];
  /** Optional definition text. */
  definition?: string;
}
