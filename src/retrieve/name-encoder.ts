/**
 * What retrieval needs from the bi-encoder: unit vectors for strings. `BiEncoder` in src/encode
 * satisfies it; keeping the dependency this narrow lets index building and retrieval be tested
 * with any encoder.
 */
export interface NameEncoder {
  readonly dims: number;
  /** Model id from the model manifest, recorded in the index manifest. */
  readonly modelId: string;
  /**
   * One L2-normalized vector per input, in input order. `groups` (one id per text) keeps texts of
   * different groups out of each other's batches, so a text's vector depends only on its group —
   * quantized models scale activations per batch.
   */
  encode(texts: string[], groups?: readonly number[]): Promise<Float32Array[]>;
}
