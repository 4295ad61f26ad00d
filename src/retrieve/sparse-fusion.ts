import type { Concept } from '../kb/concept.ts';
import type { ConceptHit } from './candidate-retriever.ts';

/**
 * Hybrid scoring of the dense candidates (BioSyn's sparse + dense idea, on the candidate list
 * only): each non-exact hit's score becomes (1 − λ)·dense + λ·sparse, sparse the best cosine of
 * character 3-gram TF-IDF vectors between the query and one of the concept's names (the lexical
 * baseline's representation, IDF over every KB name). Word-order and morphology variants that
 * the embedding scatters ("hyperalphalipoproteinemic") keep their spelling overlap. Exact hits
 * stay first and keep score 1. Cheap: ~20 candidates × a few names per mention, no index.
 */
export class SparseFusion {
  private readonly normalize: (s: string) => string;
  private readonly gramId = new Map<string, number>();
  private readonly idf: Float64Array;
  private readonly unseenIdf: number;
  /** Names of concept c are rows nameStart[c] … nameStart[c+1]-1; row r's grams are pairs pairStart[r] … pairStart[r+1]-1. */
  private readonly nameStart: Int32Array;
  private readonly pairStart: Int32Array;
  private readonly pairGram: Int32Array;
  private readonly pairWeight: Float32Array;
  private readonly rowNorm: Float32Array;
  readonly weight: number;
  /** Query weights by gram id, zero between queries (fuse spreads one query at a time into it). */
  private scratch: Float64Array | undefined;

  /** Precomputes every name's TF-IDF vector once (~1.5M gram entries for MEDIC, ~12 MB), so scoring is lookups only. */
  constructor(concepts: readonly Concept[], normalize: (s: string) => string, weight: number) {
    this.normalize = normalize;
    this.weight = weight;
    this.nameStart = new Int32Array(concepts.length + 1);
    const rows: Map<number, number>[] = [];
    const df: number[] = [];
    concepts.forEach((concept, c) => {
      this.nameStart[c] = rows.length;
      for (const name of [concept.name, ...concept.synonyms]) {
        const counts = new Map<number, number>();
        for (const [gram, tf] of trigramCounts(normalize(name))) {
          let id = this.gramId.get(gram);
          if (id === undefined) {
            id = df.length;
            this.gramId.set(gram, id);
            df.push(0);
          }
          counts.set(id, tf);
          df[id]!++;
        }
        rows.push(counts);
      }
    });
    this.nameStart[concepts.length] = rows.length;
    this.idf = Float64Array.from(df, (n) => Math.log((1 + rows.length) / (1 + n)) + 1);
    this.unseenIdf = Math.log(1 + rows.length) + 1;
    const total = rows.reduce((n, r) => n + r.size, 0);
    this.pairStart = new Int32Array(rows.length + 1);
    this.pairGram = new Int32Array(total);
    this.pairWeight = new Float32Array(total);
    this.rowNorm = new Float32Array(rows.length);
    let at = 0;
    rows.forEach((counts, r) => {
      this.pairStart[r] = at;
      let sum = 0;
      for (const [id, tf] of counts) {
        const w = tf * this.idf[id]!;
        this.pairGram[at] = id;
        this.pairWeight[at++] = w;
        sum += w * w;
      }
      this.rowNorm[r] = Math.sqrt(sum);
    });
    this.pairStart[rows.length] = at;
  }

  /** Query vector by gram id (grams the KB never has only add to the norm). */
  private queryVector(text: string): { ids: number[]; weights: number[]; norm: number } {
    const ids: number[] = [];
    const weights: number[] = [];
    let sum = 0;
    for (const [gram, tf] of trigramCounts(this.normalize(text))) {
      const id = this.gramId.get(gram);
      const w = tf * (id === undefined ? this.unseenIdf : this.idf[id]!);
      if (id !== undefined) {
        ids.push(id);
        weights.push(w);
      }
      sum += w * w;
    }
    return { ids, weights, norm: Math.sqrt(sum) };
  }

  /** Best TF-IDF cosine between the query (spread into `dense`, by gram id) and any name of the concept. */
  private score(dense: Float64Array, queryNorm: number, conceptIndex: number): number {
    let best = 0;
    for (let r = this.nameStart[conceptIndex]!; r < this.nameStart[conceptIndex + 1]!; r++) {
      const norm = this.rowNorm[r]!;
      if (norm === 0) continue;
      let dot = 0;
      for (let p = this.pairStart[r]!; p < this.pairStart[r + 1]!; p++) dot += dense[this.pairGram[p]!]! * this.pairWeight[p]!;
      const cos = dot / (queryNorm * norm);
      if (cos > best) best = cos;
    }
    return best;
  }

  /** The hits with fused scores, exact block first, the rest re-sorted (ties on concept order). */
  fuse(queryTexts: readonly string[], hits: readonly ConceptHit[]): ConceptHit[] {
    if (this.weight <= 0) return [...hits];
    const exact = hits.filter((h) => h.lexical);
    const others = hits.filter((h) => !h.lexical);
    const sparse = new Float64Array(others.length);
    // One query at a time, spread into a dense array by gram id: array reads in the inner loop, not map lookups.
    this.scratch ??= new Float64Array(this.idf.length);
    const dense = this.scratch;
    for (const text of queryTexts) {
      const q = this.queryVector(text);
      if (q.norm === 0) continue;
      q.ids.forEach((id, i) => (dense[id] = q.weights[i]!));
      others.forEach((h, i) => (sparse[i] = Math.max(sparse[i]!, this.score(dense, q.norm, h.conceptIndex))));
      for (const id of q.ids) dense[id] = 0;
    }
    const fused = others.map((h, i) => ({ ...h, score: (1 - this.weight) * h.score + this.weight * sparse[i]! }));
    fused.sort((a, b) => b.score - a.score || a.conceptIndex - b.conceptIndex);
    return [...exact, ...fused];
  }
}

/** Character-trigram counts of a text padded with one space each side (the sparse score's terms). */
export function trigramCounts(text: string): Map<string, number> {
  const padded = ` ${text} `;
  const counts = new Map<string, number>();
  for (let i = 0; i + 3 <= padded.length; i++) {
    const t = padded.slice(i, i + 3);
    counts.set(t, (counts.get(t) ?? 0) + 1);
  }
  return counts;
}
