import type { Concept } from '../src/kb/concept.ts';
import { trigramCounts } from '../src/retrieve/sparse-fusion.ts';

/**
 * The reference lexical linker of ../shared/data/README.md: exact normalized-name match first,
 * then cosine over character 3-gram TF-IDF vectors of every name, best name per concept.
 * It exists to put our numbers next to a simple, well-known baseline measured in the same run.
 */
export class LexicalBaseline {
  private readonly conceptOf: Int32Array;
  private readonly norms: Float64Array;
  private readonly postings = new Map<string, { rows: number[]; weights: number[] }>();
  private readonly idf = new Map<string, number>();
  private readonly exact = new Map<string, number[]>();
  private readonly normalize: (s: string) => string;

  constructor(concepts: readonly Concept[], normalize: (s: string) => string) {
    this.normalize = normalize;
    const rows: string[] = [];
    const owners: number[] = [];
    concepts.forEach((concept, ci) => {
      const seen = new Set<string>();
      for (const name of [concept.name, ...concept.synonyms]) {
        const key = normalize(name);
        if (!key || seen.has(key)) continue;
        seen.add(key);
        rows.push(key);
        owners.push(ci);
        const list = this.exact.get(key);
        if (!list) this.exact.set(key, [ci]);
        else if (!list.includes(ci)) list.push(ci);
      }
    });
    this.conceptOf = Int32Array.from(owners);
    const df = new Map<string, number>();
    const grams = rows.map((r) => trigramCounts(r));
    for (const g of grams) for (const t of g.keys()) df.set(t, (df.get(t) ?? 0) + 1);
    for (const [t, n] of df) this.idf.set(t, Math.log((1 + rows.length) / (1 + n)) + 1);
    this.norms = new Float64Array(rows.length);
    grams.forEach((g, row) => {
      let sum = 0;
      for (const [t, tf] of g) {
        const w = tf * this.idf.get(t)!;
        sum += w * w;
        let p = this.postings.get(t);
        if (!p) this.postings.set(t, (p = { rows: [], weights: [] }));
        p.rows.push(row);
        p.weights.push(w);
      }
      this.norms[row] = Math.sqrt(sum);
    });
  }

  /** Concept indices, best first. */
  rank(mention: string, k: number): number[] {
    const key = this.normalize(mention);
    const out: number[] = [...(this.exact.get(key) ?? [])];
    const scores = new Map<number, number>();
    let qnorm = 0;
    for (const [t, tf] of trigramCounts(key)) {
      const idf = this.idf.get(t);
      if (idf === undefined) continue;
      const qw = tf * idf;
      qnorm += qw * qw;
      const p = this.postings.get(t)!;
      for (let i = 0; i < p.rows.length; i++) scores.set(p.rows[i]!, (scores.get(p.rows[i]!) ?? 0) + qw * p.weights[i]!);
    }
    const best = new Map<number, number>();
    for (const [row, dot] of scores) {
      const cos = dot / (this.norms[row]! * Math.sqrt(qnorm) || 1);
      const ci = this.conceptOf[row]!;
      if (cos > (best.get(ci) ?? -1)) best.set(ci, cos);
    }
    const ranked = [...best.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).map(([ci]) => ci);
    for (const ci of ranked) {
      if (out.length >= k) break;
      if (!out.includes(ci)) out.push(ci);
    }
    return out.slice(0, k);
  }
}

