import { createHash } from 'node:crypto';
import type { Concept } from './concept.ts';
import { mergeConcept } from './concept-builder.ts';
import { normalizeId } from './ids.ts';
import { conceptToJsonLine } from './jsonl-format.ts';

/**
 * The loaded knowledge base: id → Concept, with alt ids resolving to their concept.
 * Adding a concept whose id is already present merges the two (a vocabulary loaded from two files).
 */
export class ConceptStore implements Iterable<Concept> {
  private readonly byId = new Map<string, Concept>();
  private readonly byAltId = new Map<string, string>();
  /**
   * Alt id → the ids of every concept that listed it (possibly repeated, possibly one that has
   * since dropped it): releaseAlt reads them instead of scanning the store, which made a KB whose
   * concepts each name the next one's id as an alt id load in quadratic time.
   */
  private readonly altClaimants = new Map<string, string[]>();
  private names = 0;
  private sortedCache: Concept[] | undefined;

  /** Adds or merges a concept. The store keeps (and may later mutate) the object passed in. */
  add(concept: Concept): void {
    this.sortedCache = undefined;
    const existing = this.byId.get(concept.id);
    if (existing) {
      this.names -= 1 + existing.synonyms.length;
      mergeConcept(existing, concept);
      this.names += 1 + existing.synonyms.length;
      this.indexAlts(existing);
      return;
    }
    this.byId.set(concept.id, concept);
    this.names += 1 + concept.synonyms.length;
    this.releaseAlt(concept.id);
    this.indexAlts(concept);
  }

  /**
   * The concept with this id, or whose alt id this is. Tries the id as given first, then its
   * normalized form, so callers may pass raw gold ids (`D005955`).
   */
  get(id: string): Concept | undefined {
    const found = this.lookup(id);
    if (found) return found;
    const normalized = normalizeId(id);
    return normalized === id ? undefined : this.lookup(normalized);
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  /** The primary id that `id` (primary or alt, raw or normalized) resolves to. */
  resolveId(id: string): string | undefined {
    return this.get(id)?.id;
  }

  /** Number of concepts (alt ids not counted). */
  get size(): number {
    return this.byId.size;
  }

  /** Number of names: preferred names plus synonyms. */
  get nameCount(): number {
    return this.names;
  }

  [Symbol.iterator](): Iterator<Concept> {
    return this.byId.values();
  }

  /** Concepts in insertion order. */
  values(): IterableIterator<Concept> {
    return this.byId.values();
  }

  /** Concepts sorted by id (code-unit order, locale independent): the canonical export order. */
  sorted(): Concept[] {
    if (!this.sortedCache) {
      this.sortedCache = [...this.byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    }
    return this.sortedCache;
  }

  /**
   * sha256 (hex) of the canonical JSONL (concepts sorted by id, one `conceptToJsonLine` + '\n'
   * each) — equal to the sha256 of the file `kb export` writes. Hashed line by line, so a
   * multi-gigabyte KB is never held as one string. Index manifests record it to detect a KB change.
   */
  checksum(): string {
    const hash = createHash('sha256');
    for (const concept of this.sorted()) {
      hash.update(conceptToJsonLine(concept));
      hash.update('\n');
    }
    return hash.digest('hex');
  }

  private lookup(id: string): Concept | undefined {
    const direct = this.byId.get(id);
    if (direct) return direct;
    const primary = this.byAltId.get(id);
    return primary === undefined ? undefined : this.byId.get(primary);
  }

  /**
   * Indexes the concept's alt ids. A primary id always wins over someone else's alt id, and is
   * dropped from the concept's altIds: they are exported, and the evaluator and the training
   * pipeline read them as "a gold id equal to one is a hit" for this concept. Of several concepts
   * claiming one alt id (CTD lists a DOID id under several diseases), the smallest id wins the
   * lookup, whatever the order they came in: a store and its export (sorted by id) read back
   * resolve every alt id alike.
   */
  private indexAlts(concept: Concept): void {
    if (concept.altIds.some((alt) => this.byId.has(alt))) concept.altIds = concept.altIds.filter((alt) => !this.byId.has(alt));
    for (const alt of concept.altIds) {
      const claimant = this.byAltId.get(alt);
      if (claimant === undefined || concept.id < claimant) this.byAltId.set(alt, concept.id);
      const claimants = this.altClaimants.get(alt);
      if (claimants === undefined) this.altClaimants.set(alt, [concept.id]);
      else if (claimants[claimants.length - 1] !== concept.id) claimants.push(concept.id);
    }
  }

  /** A new primary id that earlier concepts claimed as an alt id stops being their alt id. */
  private releaseAlt(id: string): void {
    if (!this.byAltId.has(id)) return;
    // Every claimant, the one that won the lookup and any later one (MEDIC 2012 has one such id).
    for (const claimant of this.altClaimants.get(id) ?? []) {
      const other = this.byId.get(claimant);
      if (other !== undefined && other.id !== id && other.altIds.includes(id)) other.altIds = other.altIds.filter((alt) => alt !== id);
    }
    this.byAltId.delete(id);
    this.altClaimants.delete(id);
  }

  /** Builds a store from concepts (tests and small tools). */
  static from(concepts: Iterable<Concept>): ConceptStore {
    const store = new ConceptStore();
    for (const c of concepts) store.add(c);
    return store;
  }
}
