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
  private readonly byId: Map<string, number>;

  private constructor(dir: string, manifest: IndexManifest, concepts: Concept[], names: NameTable, hnsw: HnswIndex, exact: ExactMatchTable) {
    this.dir = dir;
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
    verifyIndexFiles(dir, manifest);
    const concepts: Concept[] = [];
    for await (const concept of readConceptJsonl(join(dir, manifest.files.concepts))) concepts.push(concept);
    if (concepts.length !== manifest.counts.concepts) throw new InputError(`${dir}: ${concepts.length} concepts, manifest says ${manifest.counts.concepts}`, 'BAD_INDEX');
    const namesFile = join(dir, manifest.files.names);
    let names: NameTable;
    try {
      const raw = JSON.parse(readFileSync(namesFile, 'utf8')) as { names: string[]; conceptIndexOf: number[] };
      names = new NameTable(raw.names, Int32Array.from(raw.conceptIndexOf));
    } catch (error) {
      throw new InputError(`${namesFile}: ${(error as Error).message}`, 'BAD_INDEX', error);
    }
    if (names.size !== manifest.counts.names) throw new InputError(`${namesFile}: ${names.size} names, manifest says ${manifest.counts.names}`, 'BAD_INDEX');
    const hnsw = HnswIndex.load(join(dir, manifest.files.hnsw), manifest.model.dims, options.efSearch ?? manifest.hnsw.efSearch);
    if (hnsw.size !== names.size) throw new InputError(`${dir}: HNSW holds ${hnsw.size} vectors for ${names.size} names`, 'BAD_INDEX');
    const exact = ExactMatchTable.fromConcepts(concepts, normalize);
    return new LinkIndex(dir, manifest, concepts, names, hnsw, exact);
  }

  /** Concept index for an id or one of its alternative ids. */
  indexOf(id: string): number | undefined {
    return this.byId.get(id);
  }
}
