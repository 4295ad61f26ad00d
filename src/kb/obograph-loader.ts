import type { Concept } from './concept.ts';
import { addSynonym, addUnique, newConcept } from './concept-builder.ts';
import { ParseError } from './errors.ts';
import { normalizeId } from './ids.ts';
import { readWholeText } from './line-reader.ts';
import { isObject } from './safe-json.ts';
import { DEFAULT_SYNONYM_SCOPES, OBOGRAPH_SCOPE, type SynonymScope } from './synonym-scope.ts';

export interface OboGraphOptions {
  /** Synonym scopes to keep as names (default EXACT and RELATED). */
  synonymScopes?: readonly SynonymScope[];
}

interface GraphNode {
  id?: unknown;
  lbl?: unknown;
  type?: unknown;
  meta?: GraphMeta | null;
}

/** A node's meta as the document may hold it: each list is checked when read (objectsIn). */
interface GraphMeta {
  deprecated?: unknown;
  definition?: { val?: unknown } | null;
  synonyms?: unknown;
  xrefs?: unknown;
  basicPropertyValues?: unknown;
}

/** A synonym, xref or property value: `val` and, but for xrefs, `pred`. */
interface GraphValue {
  pred?: unknown;
  val?: unknown;
}

interface GraphEdge {
  sub?: unknown;
  pred?: unknown;
  obj?: unknown;
}

/**
 * Reads an OBO-Graph JSON document (hp.json): live CLASS nodes of graphs[0] become concepts,
 * `is_a` edges become parents. One JSON document, so it is parsed whole (HPO is ~23 MB) rather
 * than streamed. Ids come from IRIs (`.../obo/HP_0001250` → `HP:0001250`).
 */
export async function readOboGraph(path: string, options: OboGraphOptions = {}): Promise<Concept[]> {
  const scopes = new Set(options.synonymScopes ?? DEFAULT_SYNONYM_SCOPES);
  const text = await readWholeText(path);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    throw new ParseError(path, lineOfJsonError(text, error as Error), `invalid JSON: ${(error as Error).message}`);
  }
  const graph = (doc as { graphs?: unknown })?.graphs;
  if (!Array.isArray(graph) || graph.length === 0 || typeof graph[0] !== 'object' || graph[0] === null) {
    throw new ParseError(path, 1, 'not an OBO-Graph document: no "graphs" array');
  }
  const { nodes = [], edges = [] } = graph[0] as { nodes?: unknown; edges?: unknown };
  if (!Array.isArray(nodes) || !Array.isArray(edges)) throw new ParseError(path, 1, '"nodes" and "edges" must be arrays');

  const byId = new Map<string, Concept>();
  for (const [i, node] of objectsIn<GraphNode>(nodes, 'graphs[0].nodes', path)) {
    if (node.type !== 'CLASS' || typeof node.id !== 'string' || typeof node.lbl !== 'string') continue;
    const where = `graphs[0].nodes[${i}].meta`;
    if (node.meta !== undefined && node.meta !== null && !isObject(node.meta)) throw new ParseError(path, 1, `${where} must be an object`);
    const meta: GraphMeta = node.meta ?? {};
    if (meta.deprecated === true) continue;
    const id = normalizeId(node.id);
    // The other loaders refuse a concept without an id too: it could only be linked as ''.
    if (id.length === 0) throw new ParseError(path, 1, `graphs[0].nodes[${i}].id is empty`);
    const concept = newConcept(id, node.lbl.trim());
    if (concept.name.length === 0) continue;
    for (const [, syn] of objectsIn<GraphValue>(meta.synonyms, `${where}.synonyms`, path)) {
      const scope = typeof syn.pred === 'string' ? OBOGRAPH_SCOPE[syn.pred] : undefined;
      if (scope !== undefined && scopes.has(scope) && typeof syn.val === 'string') addSynonym(concept, syn.val.trim());
    }
    for (const [, xref] of objectsIn<GraphValue>(meta.xrefs, `${where}.xrefs`, path)) {
      if (typeof xref.val === 'string') addUnique(concept.xrefs, normalizeId(xref.val));
    }
    for (const [, pv] of objectsIn<GraphValue>(meta.basicPropertyValues, `${where}.basicPropertyValues`, path)) {
      if (typeof pv.pred === 'string' && pv.pred.endsWith('hasAlternativeId') && typeof pv.val === 'string') {
        const alt = normalizeId(pv.val);
        if (alt !== concept.id) addUnique(concept.altIds, alt);
      }
    }
    const definition = meta.definition?.val;
    if (typeof definition === 'string' && definition.trim().length > 0) concept.definition = definition.trim();
    byId.set(concept.id, concept);
  }
  for (const [, edge] of objectsIn<GraphEdge>(edges, 'graphs[0].edges', path)) {
    if (edge.pred !== 'is_a' || typeof edge.sub !== 'string' || typeof edge.obj !== 'string') continue;
    const child = byId.get(normalizeId(edge.sub));
    const parent = normalizeId(edge.obj);
    if (child && parent !== child.id) addUnique(child.parents, parent);
  }
  return [...byId.values()];
}

/**
 * The items of a list of objects with their indexes; absent or null is no items. Another value,
 * or an item that is no object, is a ParseError naming its key: read as it is, it threw a TypeError.
 * The document is parsed whole, so the line is the document's first.
 */
function objectsIn<T extends object>(list: unknown, key: string, path: string): [number, T][] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new ParseError(path, 1, `${key} must be an array`);
  return list.map((item, i): [number, T] => {
    if (!isObject(item)) throw new ParseError(path, 1, `${key}[${i}] must be an object`);
    return [i, item as T];
  });
}

/**
 * 1-based line of a JSON.parse failure. V8 gives either "at position N" or, for an unexpected
 * token, a quoted excerpt (`...` + 10 characters either side) that is located in the text.
 */
function lineOfJsonError(text: string, error: Error): number {
  let position = -1;
  const at = /position (\d+)/.exec(error.message);
  const excerpt = /^Unexpected token '([\s\S])', (\.\.\.)?"([\s\S]*)"(?:\.\.\.)? is not valid JSON/.exec(error.message);
  if (at) {
    position = Number(at[1]);
  } else if (excerpt) {
    const [, token, clipped, snippet] = excerpt;
    const start = text.indexOf(snippet!);
    if (start >= 0) position = start + (clipped ? 10 : Math.max(0, snippet!.indexOf(token!)));
  }
  if (position < 0) return 1;
  let line = 1;
  for (let i = 0; i < position && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}
