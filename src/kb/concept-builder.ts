import type { Concept } from './concept.ts';

/** A concept with the given id and preferred name and every list empty. */
export function newConcept(id: string, name: string): Concept {
  return { id, name, synonyms: [], semanticTypes: [], parents: [], xrefs: [], altIds: [] };
}

/** Appends `value` unless it is empty or already present; keeps source order. */
export function addUnique(list: string[], value: string): void {
  if (value.length === 0) return;
  // Lists are short (median 1–5); a linear scan beats allocating a Set per concept.
  for (let i = 0; i < list.length; i++) if (list[i] === value) return;
  list.push(value);
}

/** Adds a name as a synonym unless it is the preferred name or already there (exact match). */
export function addSynonym(concept: Concept, name: string): void {
  if (name.length === 0 || name === concept.name) return;
  addUnique(concept.synonyms, name);
}

/** Makes `name` the preferred name, demoting the old one to the synonyms. */
export function setPreferredName(concept: Concept, name: string): void {
  if (name === concept.name) return;
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
  if (into.definition === undefined && from.definition !== undefined) into.definition = from.definition;
}

/**
 * A copy of `s` that does not pin the line it was cut from. V8 represents substrings of 13+
 * characters as slices that keep the whole parent line alive; on a 16M-row MRCONSO that is
 * gigabytes of retained lines. Concatenation forces a fresh flat string of just this text.
 */
export function detach(s: string): string {
  if (s.length < 13) return s;
  return (' ' + s).slice(1);
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
