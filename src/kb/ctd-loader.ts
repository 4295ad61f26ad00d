import type { Concept } from './concept.ts';
import { addSynonym, addUnique, newConcept, splitList } from './concept-builder.ts';
import { ParseError } from './errors.ts';
import { normalizeId } from './ids.ts';
import { readLines } from './line-reader.ts';

const DEFAULT_COLUMNS = ['DiseaseName', 'DiseaseID', 'AltDiseaseIDs', 'Definition', 'ParentIDs', 'TreeNumbers', 'ParentTreeNumbers', 'Synonyms', 'SlimMappings'];

/**
 * Streams concepts from CTD's MEDIC `CTD_diseases.tsv(.gz)`: `#` comment lines (one of which,
 * `# DiseaseName<TAB>DiseaseID...`, names the columns — used when present so an older or newer
 * column order still loads), then one tab-separated row per disease with `|`-separated lists.
 * SlimMappings become semanticTypes; AltDiseaseIDs become altIds.
 */
export async function* readCtdDiseases(path: string): AsyncGenerator<Concept> {
  let columns = DEFAULT_COLUMNS;
  let col = indexColumns(columns);
  for await (const line of readLines(path)) {
    const text = line.text;
    if (text.length === 0) continue;
    if (text.charCodeAt(0) === 35 /* # */) {
      const header = text.slice(1).trim();
      if (header.startsWith('DiseaseName\t') || header.includes('\tDiseaseID\t')) {
        columns = header.split('\t').map((c) => c.trim());
        col = indexColumns(columns);
      }
      continue;
    }
    const fields = text.split('\t');
    if (fields.length < 2) throw new ParseError(path, line.number, `expected ${columns.length} tab-separated columns, got ${fields.length}`);
    const name = (fields[col.name] ?? '').trim();
    const rawId = (fields[col.id] ?? '').trim();
    if (rawId.length === 0) throw new ParseError(path, line.number, 'empty DiseaseID');
    if (name.length === 0) throw new ParseError(path, line.number, `empty DiseaseName for ${rawId}`);
    const concept = newConcept(normalizeId(rawId), name);
    for (const alt of splitList(at(fields, col.alt))) {
      const id = normalizeId(alt);
      if (id !== concept.id) addUnique(concept.altIds, id);
    }
    const definition = at(fields, col.definition)?.trim();
    if (definition) concept.definition = definition;
    for (const parent of splitList(at(fields, col.parents))) {
      const id = normalizeId(parent);
      if (id !== concept.id) addUnique(concept.parents, id);
    }
    for (const synonym of splitList(at(fields, col.synonyms))) addSynonym(concept, synonym);
    for (const slim of splitList(at(fields, col.slim))) addUnique(concept.semanticTypes, slim);
    yield concept;
  }
}

function at(fields: string[], index: number): string | undefined {
  return index < 0 ? undefined : fields[index];
}

function indexColumns(columns: string[]) {
  const find = (name: string) => columns.indexOf(name);
  return {
    name: Math.max(0, find('DiseaseName')),
    id: find('DiseaseID') < 0 ? 1 : find('DiseaseID'),
    alt: find('AltDiseaseIDs'),
    definition: find('Definition'),
    parents: find('ParentIDs'),
    synonyms: find('Synonyms'),
    slim: find('SlimMappings'),
  };
}
