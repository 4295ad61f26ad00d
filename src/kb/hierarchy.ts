import type { Concept } from './concept.ts';
import type { ConceptStore } from './concept-store.ts';

/** Ancestor → number of is-a edges on the shortest upward path (the node itself at 0). */
export type AncestorDepths = ReadonlyMap<string, number>;

const EMPTY: readonly string[] = Object.freeze([]);

/**
 * The is-a graph of a KB: parents/children by id, ancestors with depth, and the path length
 * through a least common ancestor that the evaluator turns into similarity 1/(1+d) and graded
 * relevance. Nodes are small integers internally; ancestor sets are computed by breadth-first
 * search (so multiple inheritance takes the shortest route and cycles terminate) and cached,
 * which keeps `pathLength` at well over 20k queries/s on MEDIC-sized KBs.
 */
export class Hierarchy {
  private readonly index = new Map<string, number>();
  private readonly ids: string[] = [];
  // Compressed adjacency (CSR): the parents of node n are parentList[parentStart[n] .. parentStart[n+1]).
  // Two typed arrays instead of two JS arrays per node: ~8 bytes per edge on a 4M-concept UMLS.
  private readonly parentStart: Int32Array;
  private readonly parentList: Int32Array;
  private readonly childStart: Int32Array;
  private readonly childList: Int32Array;
  private readonly cache = new Map<number, Map<number, number>>();
  private readonly resolveId: (id: string) => string | undefined;
  private readonly cacheLimit: number;

  /**
   * @param concepts the KB's concepts; parent ids not among them still become (root) nodes.
   * @param resolve maps an alt or raw id to its primary id (ConceptStore.resolveId).
   * @param cacheLimit ancestor maps kept before the cache is dropped (bounds memory on UMLS).
   */
  constructor(concepts: Iterable<Concept>, resolve: (id: string) => string | undefined = () => undefined, cacheLimit = 200_000) {
    this.resolveId = resolve;
    this.cacheLimit = cacheLimit;
    const edgeChild: number[] = [];
    const edgeParent: number[] = [];
    // Node → the last concept (by position) that listed it as a parent: one edge per pair in
    // constant time, however many parents a concept lists (a scan of its own was quadratic).
    const listedBy: number[] = [];
    let position = 0;
    for (const concept of concepts) {
      const child = this.node(concept.id);
      position++;
      for (const rawParent of concept.parents) {
        const parent = this.node(resolve(rawParent) ?? rawParent);
        // An alt id and its primary id may both be listed; keep one edge.
        if (parent === child || listedBy[parent] === position) continue;
        listedBy[parent] = position;
        edgeChild.push(child);
        edgeParent.push(parent);
      }
    }
    [this.parentStart, this.parentList] = toCsr(this.ids.length, edgeChild, edgeParent);
    [this.childStart, this.childList] = toCsr(this.ids.length, edgeParent, edgeChild);
  }

  static fromStore(store: ConceptStore): Hierarchy {
    return new Hierarchy(store.values(), (id) => store.resolveId(id));
  }

  /** Number of nodes (concepts plus parents referenced but not defined). */
  get size(): number {
    return this.ids.length;
  }

  has(id: string): boolean {
    return this.lookup(id) !== undefined;
  }

  parentsOf(id: string): readonly string[] {
    const n = this.lookup(id);
    return n === undefined ? EMPTY : this.idsOf(this.parentStart, this.parentList, n);
  }

  childrenOf(id: string): readonly string[] {
    const n = this.lookup(id);
    return n === undefined ? EMPTY : this.idsOf(this.childStart, this.childList, n);
  }

  /** Every ancestor of `id` with its shortest distance, `id` itself included at 0; empty if unknown. */
  ancestors(id: string): AncestorDepths {
    const n = this.lookup(id);
    const out = new Map<string, number>();
    if (n === undefined) return out;
    for (const [node, depth] of this.ancestorNodes(n)) out.set(this.ids[node]!, depth);
    return out;
  }

  /**
   * Edges on the shortest path from `a` up to a common ancestor and down to `b`
   * (min over common ancestors c of depth(a→c) + depth(b→c)): 0 for the same concept, 1 for
   * parent/child, 2 for grandparent/grandchild/siblings. Infinity when either id is unknown or
   * they share no ancestor. Alt ids resolve to their concept.
   */
  pathLength(a: string, b: string): number {
    const na = this.lookup(a);
    const nb = this.lookup(b);
    if (na === undefined || nb === undefined) return Infinity;
    if (na === nb) return 0;
    let small = this.ancestorNodes(na);
    let large = this.ancestorNodes(nb);
    if (small.size > large.size) [small, large] = [large, small];
    let best = Infinity;
    for (const [node, depth] of small) {
      if (depth >= best) continue;
      const other = large.get(node);
      if (other !== undefined && depth + other < best) best = depth + other;
    }
    return best;
  }

  /**
   * Concepts whose `pathLength` to `id` is between 1 and `maxDistance`, with that distance: up k
   * edges to an ancestor, then down at most maxDistance − k edges. For graded-relevance ideal
   * rankings; keep maxDistance small (descendant sets grow fast near the root).
   */
  neighbourhood(id: string, maxDistance = 2): Map<string, number> {
    const n = this.lookup(id);
    const best = new Map<number, number>();
    if (n === undefined) return new Map();
    for (const [ancestor, up] of this.ancestorNodes(n)) {
      if (up > maxDistance) continue;
      // Walk down from the ancestor, breadth first, within the remaining budget.
      let frontier = [ancestor];
      for (let down = 0; frontier.length > 0 && up + down <= maxDistance; down++) {
        const next: number[] = [];
        for (const node of frontier) {
          const d = up + down;
          const seen = best.get(node);
          if (seen === undefined || d < seen) best.set(node, d);
          for (let i = this.childStart[node]!; i < this.childStart[node + 1]!; i++) next.push(this.childList[i]!);
        }
        frontier = next;
      }
    }
    best.delete(n);
    const out = new Map<string, number>();
    for (const [node, d] of best) out.set(this.ids[node]!, d);
    return out;
  }

  private ancestorNodes(n: number): Map<number, number> {
    const cached = this.cache.get(n);
    if (cached) return cached;
    const depths = new Map<number, number>([[n, 0]]);
    let frontier = [n];
    for (let depth = 1; frontier.length > 0; depth++) {
      const next: number[] = [];
      for (const node of frontier) {
        for (let i = this.parentStart[node]!; i < this.parentStart[node + 1]!; i++) {
          const parent = this.parentList[i]!;
          if (depths.has(parent)) continue; // BFS: the first visit is the shortest; also stops cycles
          depths.set(parent, depth);
          next.push(parent);
        }
      }
      frontier = next;
    }
    if (this.cache.size >= this.cacheLimit) this.cache.clear();
    this.cache.set(n, depths);
    return depths;
  }

  private lookup(id: string): number | undefined {
    const direct = this.index.get(id);
    if (direct !== undefined) return direct;
    const resolved = this.resolveId(id);
    return resolved === undefined ? undefined : this.index.get(resolved);
  }

  private node(id: string): number {
    let n = this.index.get(id);
    if (n === undefined) {
      n = this.ids.length;
      this.index.set(id, n);
      this.ids.push(id);
    }
    return n;
  }

  private idsOf(start: Int32Array, list: Int32Array, n: number): string[] {
    const out: string[] = [];
    for (let i = start[n]!; i < start[n + 1]!; i++) out.push(this.ids[list[i]!]!);
    return out;
  }
}

/** Builds CSR arrays (offsets, targets) from parallel edge lists, keeping each source's edge order. */
function toCsr(nodes: number, from: number[], to: number[]): [Int32Array, Int32Array] {
  const start = new Int32Array(nodes + 1);
  for (const f of from) start[f + 1]!++;
  for (let i = 0; i < nodes; i++) start[i + 1]! += start[i]!;
  const fill = start.slice(0, nodes);
  const list = new Int32Array(from.length);
  for (let e = 0; e < from.length; e++) list[fill[from[e]!]!++] = to[e]!;
  return [start, list];
}
