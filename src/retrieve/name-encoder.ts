/**
 * What retrieval needs from the bi-encoder: unit vectors for strings. `BiEncoder` in src/encode
 * satisfies it; keeping the dependency this narrow lets index building and retrieval be tested
 * with any encoder.
 */
export interface NameEncoder {
  readonly dims: number;
  /** Model id from the model manifest, recorded in the index manifest. */
  readonly modelId: string;
  /** One L2-normalized vector per input, in input order. */
  encode(texts: string[]): Promise<Float32Array[]>;
}
