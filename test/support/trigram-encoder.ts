import type { NameEncoder } from '../../src/retrieve/name-encoder.ts';

/**
 * A deterministic stand-in encoder for unit tests of retrieval and linking logic: hashed
 * character trigrams, L2-normalized. Similar strings get similar vectors, which is all these
 * tests need; the end-to-end test uses the real ONNX model.
 */
export class TrigramEncoder implements NameEncoder {
  readonly dims: number;
  readonly modelId = 'test-trigram-encoder';
  calls = 0;

  constructor(dims = 64) {
    this.dims = dims;
  }

  async encode(texts: string[]): Promise<Float32Array[]> {
    this.calls++;
    return texts.map((t) => this.vector(t));
  }

  vector(text: string): Float32Array {
    const v = new Float32Array(this.dims);
    const padded = ` ${text.toLowerCase()} `;
    for (let i = 0; i + 3 <= padded.length; i++) {
      let h = 2166136261;
      for (let j = i; j < i + 3; j++) h = Math.imul(h ^ padded.charCodeAt(j), 16777619);
      v[(h >>> 0) % this.dims]! += 1;
    }
    let norm = 0;
    for (const x of v) norm += x * x;
    norm = Math.sqrt(norm) || 1;
    for (let i = 0; i < v.length; i++) v[i]! /= norm;
    return v;
  }
}

export const lowerNormalize = (s: string) => s.toLowerCase().replace(/\s+/g, ' ').trim();
