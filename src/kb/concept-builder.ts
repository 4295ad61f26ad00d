import type { Concept } from './concept.ts';

/** A concept with the given id and preferred name and every list empty. */
export function newConcept(id: string, name: string): Concept {
  return { id, name, synonyms: [], semanticTypes: [], parents: [], xrefs: [], altIds: [] };
}

/** Lists up to this long are scanned; longer ones get a Set beside them (listIndexes). */
const SCAN_LIMIT = 32;

/**
 * The items of each long list, so that a concept with 100k synonyms (or parents, or lines of one id
 * to merge) loads in linear time: a scan per added item made that minutes. Keyed by the array, so
 * a list that is replaced (compactConcept, a filter) drops its index with it. A list changed other
 * than through addUnique is noticed by its length no longer being the index's size, and re-indexed;
 * a change that keeps the length (one item swapped for another) must drop the index itself, as
 * setPreferredName does.
 */
const listIndexes = new WeakMap<string[], Set<string>>();

/**
 * Appends `value` unless it is empty or already present; keeps source order. `keep` makes the
 * copy that is stored (detach), only when the value is new.
 */
export function addUnique(list: string[], value: string, keep?: (value: string) => string): void {
  if (value.length === 0) return;
  if (list.length < SCAN_LIMIT) {
    // Lists are short (median 1–5); a linear scan beats allocating a Set per concept.
    for (let i = 0; i < list.length; i++) if (list[i] === value) return;
    list.push(keep === undefined ? value : keep(value));
    return;
  }
  let index = listIndexes.get(list);
  if (index === undefined || index.size !== list.length) listIndexes.set(list, (index = new Set(list)));
  if (index.has(value)) return;
  // The stored copy goes into the index too: `value` may pin the whole line it was cut from.
  const stored = keep === undefined ? value : keep(value);
  list.push(stored);
  index.add(stored);
}

/** Adds a name as a synonym unless it is the preferred name or already there (exact match). */
export function addSynonym(concept: Concept, name: string, keep?: (name: string) => string): void {
  if (name.length === 0 || name === concept.name) return;
  addUnique(concept.synonyms, name, keep);
}

/** Makes `name` the preferred name, demoting the old one to the synonyms. */
export function setPreferredName(concept: Concept, name: string): void {
  if (name === concept.name) return;
  // One synonym out and another in keeps the length: the index would not see the change.
  listIndexes.delete(concept.synonyms);
  const at = concept.synonyms.indexOf(name);
  if (at >= 0) concept.synonyms.splice(at, 1);
  const old = concept.name;
  concept.name = name;
  if (old.length > 0) concept.synonyms.unshift(old);
}

/**
 * Unions `from` into `into` (same concept seen in two files, or twice in one): names, parents,
 * xrefs, types and alt ids are merged; the first preferred name and definition win.
 */
export function mergeConcept(into: Concept, from: Concept): void {
  if (into.name.length === 0) into.name = from.name;
  else addSynonym(into, from.name);
  for (const s of from.synonyms) addSynonym(into, s);
  for (const t of from.semanticTypes) addUnique(into.semanticTypes, t);
  for (const p of from.parents) if (p !== into.id) addUnique(into.parents, p);
  for (const x of from.xrefs) addUnique(into.xrefs, x);
  for (const a of from.altIds) if (a !== into.id) addUnique(into.altIds, a);
  for (const n of from.xrefNames ?? []) addUnique((into.xrefNames ??= []), n);
  if (into.definition === undefined && from.definition !== undefined) into.definition = from.definition;
}

/**
 * A flat copy of `s` that does not pin the line it was cut from. V8 represents substrings of 13+
 * characters as slices that keep the whole parent line alive (and concatenations as cons
 * strings); on a 16M-row MRCONSO that is gigabytes of retained lines. A UTF-8 round trip through
 * a Buffer yields a fresh sequential string: measured 64 B per 30-char name vs 168 B for the
 * slice (and 96 B for the `(' ' + s).slice(1)` idiom), at the same speed.
 */
export function detach(s: string): string {
  if (s.length < 13) return s;
  return Buffer.from(s, 'utf8').toString('utf8');
}

/**
 * Replaces each non-empty list with an exact-size copy. Arrays grown by push keep spare capacity
 * (17 slots after the first push); across millions of concepts that is most of the heap.
 */
export function compactConcept(c: Concept): void {
  if (c.synonyms.length > 0) c.synonyms = c.synonyms.slice();
  if (c.semanticTypes.length > 0) c.semanticTypes = c.semanticTypes.slice();
  if (c.parents.length > 0) c.parents = c.parents.slice();
  if (c.xrefs.length > 0) c.xrefs = c.xrefs.slice();
  if (c.altIds.length > 0) c.altIds = c.altIds.slice();
}

/** Splits a `|`-separated list field, trimming and dropping empty items. */
export function splitList(field: string | undefined, separator = '|'): string[] {
  if (field === undefined || field.length === 0) return [];
  const out: string[] = [];
  for (const part of field.split(separator)) {
    const item = part.trim();
    if (item.length > 0) out.push(item);
  }
  return out;
}
