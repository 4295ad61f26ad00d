import type { Concept } from './concept.ts';
import { normalizeId } from './ids.ts';

const FIELDS: ReadonlySet<string> = new Set(['id', 'name', 'synonyms', 'semanticTypes', 'parents', 'xrefs', 'altIds', 'xrefNames', 'definition']);

/**
 * One concept as one JSONL line (docs/kb-jsonl.md). Field order is fixed and every list is
 * written even when empty, so the output is canonical (the store checksum hashes exactly this)
 * and the Python reader needs no defaults; `xrefNames` only when there are some, so a KB without
 * them hashes as it always did.
 */
export function conceptToJsonLine(c: Concept): string {
  const base =
    `{"id":${JSON.stringify(c.id)},"name":${JSON.stringify(c.name)},"synonyms":${JSON.stringify(c.synonyms)},` +
    `"semanticTypes":${JSON.stringify(c.semanticTypes)},"parents":${JSON.stringify(c.parents)},` +
    `"xrefs":${JSON.stringify(c.xrefs)},"altIds":${JSON.stringify(c.altIds)}` +
    (c.xrefNames !== undefined && c.xrefNames.length > 0 ? `,"xrefNames":${JSON.stringify(c.xrefNames)}` : '');
  return c.definition === undefined ? `${base}}` : `${base},"definition":${JSON.stringify(c.definition)}}`;
}

/**
 * Parses one JSONL line into a Concept, or returns a reason string when the line is not a valid
 * concept object (the caller turns it into a ParseError naming file and line).
 */
export function conceptFromJsonLine(text: string): Concept | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `not JSON: ${(error as Error).message}`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const o = value as Record<string, unknown>;
  // A misspelt field ("synonym", "alt_ids") would otherwise drop its data without a word.
  for (const key of Object.keys(o)) if (!FIELDS.has(key)) return `unknown field ${JSON.stringify(key.length > 40 ? `${key.slice(0, 37)}...` : key)}`;
  if (typeof o.id !== 'string' || o.id.trim().length === 0) return 'missing or empty "id"';
  // Whitespace only is empty: such a name matches no mention, and the other loaders trim names.
  if (typeof o.name !== 'string' || o.name.trim().length === 0) return 'missing or empty "name"';
  if (o.definition !== undefined && o.definition !== null && typeof o.definition !== 'string') return '"definition" must be a string';
  const lists: Record<string, string[]> = {};
  for (const field of ['synonyms', 'semanticTypes', 'parents', 'xrefs', 'altIds', 'xrefNames']) {
    const list = o[field];
    if (list === undefined || list === null) {
      lists[field] = [];
    } else if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) {
      return `"${field}" must be an array of strings`;
    } else {
      lists[field] = list as string[];
    }
  }
  const id = normalizeId(o.id);
  const concept: Concept = {
    id,
    name: o.name,
    // Blank synonyms are dropped as empty ones are, as every other loader drops them.
    synonyms: dedupe(lists.synonyms!.filter(isNotBlank), o.name),
    semanticTypes: dedupe(lists.semanticTypes!),
    parents: dedupe(lists.parents!.map(normalizeId), id),
    xrefs: dedupe(lists.xrefs!.map(normalizeId)),
    altIds: dedupe(lists.altIds!.map(normalizeId), id),
  };
  // Other vocabularies' names, dropped when blank as synonyms are: a blank one names nothing.
  const xrefNames = dedupe(lists.xrefNames!.filter(isNotBlank));
  if (xrefNames.length > 0) concept.xrefNames = xrefNames;
  if (typeof o.definition === 'string' && o.definition.length > 0) concept.definition = o.definition;
  return concept;
}

function isNotBlank(name: string): boolean {
  return name.trim().length > 0;
}

function dedupe(list: string[], exclude?: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const item of list) {
    if (item.length === 0 || item === exclude || seen.has(item)) continue;
    seen.add(item);
    out.push(item);
  }
  return out;
}
