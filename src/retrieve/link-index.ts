import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Concept } from '../kb/concept.ts';
import { InputError } from '../kb/errors.ts';
import { readConceptJsonl } from '../kb/jsonl-loader.ts';
import { ExactMatchTable } from './exact-match-table.ts';
import { HnswIndex } from './hnsw-index.ts';
import { readIndexManifest, verifyIndexFiles, type IndexManifest } from './index-manifest.ts';
import { NameTable } from './name-table.ts';

/**
 * A loaded index directory: the concepts, the name table, the HNSW graph over name vectors and
 * the exact normalized-name table. Read-only once open; one instance serves every query.
 */
export class LinkIndex {
  readonly dir: string;
  readonly manifest: IndexManifest;
  readonly concepts: Concept[];
  readonly names: NameTable;
  readonly hnsw: HnswIndex;
  readonly exact: ExactMatchTable;
  /** false: an index built before checksums, its files checked for shape only. */
  readonly filesVerified: boolean;
  private readonly byId: Map<string, number>;

  private constructor(dir: string, manifest: IndexManifest, concepts: Concept[], names: NameTable, hnsw: HnswIndex, exact: ExactMatchTable, filesVerified: boolean) {
    this.dir = dir;
    this.filesVerified = filesVerified;
    this.manifest = manifest;
    this.concepts = concepts;
    this.names = names;
    this.hnsw = hnsw;
    this.exact = exact;
    this.byId = new Map();
    concepts.forEach((concept, i) => {
      this.byId.set(concept.id, i);
      for (const alt of concept.altIds) if (!this.byId.has(alt)) this.byId.set(alt, i);
    });
  }

  static async open(dir: string, normalize: (s: string) => string, options: { efSearch?: number } = {}): Promise<LinkIndex> {
    const manifest = readIndexManifest(dir);
    // Before any file is parsed: a damaged or swapped file is named as such, never served.
    const filesVerified = verifyIndexFiles(dir, manifest);
    const concepts: Concept[] = [];
    for await (const concept of readConceptJsonl(join(dir, manifest.files.concepts))) concepts.push(concept);
    if (concepts.length !== manifest.counts.concepts) throw new InputError(`${dir}: ${concepts.length} concepts, manifest says ${manifest.counts.concepts}`, 'BAD_INDEX');
    const namesFile = join(dir, manifest.files.names);
    const names = readNameTable(namesFile, concepts.length);
    if (names.size !== manifest.counts.names) throw new InputError(`${namesFile}: ${names.size} names, manifest says ${manifest.counts.names}`, 'BAD_INDEX');
    const hnsw = HnswIndex.load(join(dir, manifest.files.hnsw), manifest.model.dims, options.efSearch ?? manifest.hnsw.efSearch, { checksummed: filesVerified });
    if (hnsw.size !== names.size) throw new InputError(`${dir}: HNSW holds ${hnsw.size} vectors for ${names.size} names`, 'BAD_INDEX');
    const exact = ExactMatchTable.fromConcepts(concepts, normalize);
    return new LinkIndex(dir, manifest, concepts, names, hnsw, exact, filesVerified);
  }

  /** Concept index for an id or one of its alternative ids. */
  indexOf(id: string): number | undefined {
    return this.byId.get(id);
  }
}

/**
 * names.json as the builder writes it: a string per name and, for each, the index of the concept
 * it names. An index with checksums has it as built; one built before them is read on its shape
 * alone, and an owner past the concepts would be served, failing as a TypeError on the first query
 * that retrieves the name. So the shape is checked here, whichever index it is (a linear pass).
 */
function readNameTable(file: string, conceptCount: number): NameTable {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new InputError(`${file}: ${(error as Error).message}`, 'BAD_INDEX', error);
  }
  const refuse = (what: string) => new InputError(`${file}: ${what}: the file is damaged or not this index's; rebuild the index with \`cuilink index build\``, 'BAD_INDEX');
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw refuse('not a JSON object');
  const { names, conceptIndexOf } = raw as { names?: unknown; conceptIndexOf?: unknown };
  if (!Array.isArray(names)) throw refuse("'names' is not an array");
  if (!Array.isArray(conceptIndexOf)) throw refuse("'conceptIndexOf' is not an array");
  if (names.length !== conceptIndexOf.length) throw refuse(`'names' holds ${names.length} entries, 'conceptIndexOf' ${conceptIndexOf.length}`);
  for (let i = 0; i < names.length; i++) {
    if (typeof names[i] !== 'string') throw refuse(`'names[${i}]' is not a string`);
    const owner: unknown = conceptIndexOf[i];
    if (typeof owner !== 'number' || !Number.isInteger(owner) || owner < 0 || owner >= conceptCount) {
      throw refuse(`'conceptIndexOf[${i}]' is ${String(JSON.stringify(owner)).slice(0, 40)}, not a concept index (0 to ${conceptCount - 1})`);
    }
  }
  return new NameTable(names as string[], Int32Array.from(conceptIndexOf as number[]));
}
