/** What reranking needs from the cross-encoder (`CrossEncoder` in src/encode satisfies it). */
export interface PairScorer {
  readonly modelId: string;
  /** One raw logit per (query, candidate) pair, in input order; `groups` as in NameEncoder.encode. */
  score(pairs: { query: string; candidate: string }[], groups?: readonly number[]): Promise<Float32Array>;
}
