/** What reranking needs from the cross-encoder (`CrossEncoder` in src/encode satisfies it). */
export interface PairScorer {
  readonly modelId: string;
  /** One raw logit per (query, candidate) pair, in input order. */
  score(pairs: { query: string; candidate: string }[]): Promise<Float32Array>;
}
