import type { Concept } from './concept.ts';
import { addSynonym, addUnique, newConcept, splitList } from './concept-builder.ts';
import { ParseError } from './errors.ts';
import { normalizeId } from './ids.ts';
import { readLines } from './line-reader.ts';

/**
 * Reads a BioSyn/DNorm dictionary: `id[|id...]||name[|name...]` per line. The first id is the
 * concept's id, further ids are alt ids; the first name is preferred unless the concept was
 * already seen, in which case every name is a synonym — BioSyn's own processed dictionaries repeat
 * one id on many lines, one name each, and those lines are merged into one concept here.
 * Bare ids are normalized (`D012345` → `MESH:D012345`, `613097` → `OMIM:613097`).
 */
export async function readBiosynDictionary(path: string): Promise<Concept[]> {
  const byId = new Map<string, Concept>();
  for await (const line of readLines(path)) {
    const text = line.text;
    if (text.trim().length === 0) continue;
    const split = text.indexOf('||');
    if (split < 0) throw new ParseError(path, line.number, "expected 'ids||name', found no '||'");
    const ids = splitList(text.slice(0, split)).map(normalizeId);
    const names = splitList(text.slice(split + 2));
    if (ids.length === 0) throw new ParseError(path, line.number, "no id before '||'");
    if (names.length === 0) throw new ParseError(path, line.number, "no name after '||'");
    const id = ids[0]!;
    let concept = byId.get(id);
    if (!concept) {
      concept = newConcept(id, names[0]!);
      byId.set(id, concept);
    }
    for (const name of names) addSynonym(concept, name);
    for (const alt of ids.slice(1)) if (alt !== id) addUnique(concept.altIds, alt);
  }
  return [...byId.values()];
}
