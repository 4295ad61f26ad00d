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
  private readonly concepts: readonly Concept[];
  private readonly normalize: (s: string) => string;
  private readonly idf = new Map<string, number>();
  private readonly unseenIdf: number;
  readonly weight: number;

  constructor(concepts: readonly Concept[], normalize: (s: string) => string, weight: number) {
    this.concepts = concepts;
    this.normalize = normalize;
    this.weight = weight;
    const df = new Map<string, number>();
    let rows = 0;
    for (const concept of concepts) {
      for (const name of [concept.name, ...concept.synonyms]) {
        rows++;
        for (const t of trigramCounts(normalize(name)).keys()) df.set(t, (df.get(t) ?? 0) + 1);
      }
    }
    for (const [t, n] of df) this.idf.set(t, Math.log((1 + rows) / (1 + n)) + 1);
    this.unseenIdf = Math.log(1 + rows) + 1;
  }

  private vector(text: string): { weights: Map<string, number>; norm: number } {
    const weights = new Map<string, number>();
    let sum = 0;
    for (const [t, tf] of trigramCounts(this.normalize(text))) {
      const w = tf * (this.idf.get(t) ?? this.unseenIdf);
      weights.set(t, w);
      sum += w * w;
    }
    return { weights, norm: Math.sqrt(sum) };
  }

  /** Best TF-IDF cosine between any of the query texts and any name of the concept. */
  score(queries: readonly { weights: Map<string, number>; norm: number }[], conceptIndex: number): number {
    const concept = this.concepts[conceptIndex]!;
    let best = 0;
    for (const name of [concept.name, ...concept.synonyms]) {
      const v = this.vector(name);
      if (v.norm === 0) continue;
      for (const q of queries) {
        if (q.norm === 0) continue;
        let dot = 0;
        for (const [t, w] of q.weights) {
          const other = v.weights.get(t);
          if (other !== undefined) dot += w * other;
        }
        const cos = dot / (q.norm * v.norm);
        if (cos > best) best = cos;
      }
    }
    return best;
  }

  /** The hits with fused scores, exact block first, the rest re-sorted (ties on concept order). */
  fuse(queryTexts: readonly string[], hits: readonly ConceptHit[]): ConceptHit[] {
    if (this.weight <= 0) return [...hits];
    const queries = queryTexts.map((t) => this.vector(t));
    const exact = hits.filter((h) => h.exact);
    const dense = hits
      .filter((h) => !h.exact)
      .map((h) => ({ ...h, score: (1 - this.weight) * h.score + this.weight * this.score(queries, h.conceptIndex) }));
    dense.sort((a, b) => b.score - a.score || a.conceptIndex - b.conceptIndex);
    return [...exact, ...dense];
  }
}

function trigramCounts(text: string): Map<string, number> {
  const padded = ` ${text} `;
  const counts = new Map<string, number>();
  for (let i = 0; i + 3 <= padded.length; i++) {
    const t = padded.slice(i, i + 3);
    counts.set(t, (counts.get(t) ?? 0) + 1);
  }
  return counts;
}
