import { ontologyRoots } from './candidate-retriever.ts';
import type { LinkIndex } from './link-index.ts';

/**
 * The index's own vector for a mention that is exactly a KB name: the vector stored in HNSW for
 * that name, read back instead of encoding the mention again. Only for a mention whose exact
 * lookup gives one concept: its top-1 is then that exact hit whatever the vector, and the vector
 * decides only the dense candidates after it. The name vector was encoded at index build from the
 * KB's spelling of the name (same query mode: the bi-encoder encodes names and `mention` queries
 * alike), so those later candidates can differ slightly from encoding the mention's own spelling.
 */
export class ExactNameVectors {
  private readonly index: LinkIndex;
  private readonly normalize: (s: string) => string;
  /** normalized name → its first vector label, per concept: `${conceptIndex}\u0000${key}`. */
  private labels: Map<string, number> | undefined;
  /** The retriever never returns a whole-ontology root, so its name is no exact hit: its vector would pick the top-1. */
  private readonly roots: ReadonlySet<number>;

  constructor(index: LinkIndex, normalize: (s: string) => string) {
    this.index = index;
    this.normalize = normalize;
    this.roots = ontologyRoots(index.concepts);
  }

  /**
   * The stored vector of `texts[0]` when the exact lookup of all `texts` (those `allow` keeps)
   * names exactly one concept and `texts[0]` is one of its names; undefined otherwise.
   */
  vectorFor(texts: readonly string[], allow?: (conceptIndex: number) => boolean): Float32Array | undefined {
    let only: number | undefined;
    for (const text of texts) {
      for (const conceptIndex of this.index.exact.lookup(text)) {
        if (this.roots.has(conceptIndex) || (allow && !allow(conceptIndex))) continue;
        if (only !== undefined && only !== conceptIndex) return undefined;
        only = conceptIndex;
      }
    }
    if (only === undefined) return undefined;
    const label = this.labelMap().get(`${only}\u0000${this.normalize(texts[0]!)}`);
    return label === undefined ? undefined : this.index.hnsw.vector(label);
  }

  private labelMap(): Map<string, number> {
    if (this.labels === undefined) {
      const labels = new Map<string, number>();
      const { names, conceptIndexOf } = this.index.names;
      names.forEach((name, label) => {
        const key = `${conceptIndexOf[label]!}\u0000${this.normalize(name)}`;
        if (!labels.has(key)) labels.set(key, label);
      });
      this.labels = labels;
    }
    return this.labels;
  }
}
