/**
 * [batch, seq, hidden] → [batch, hidden]: masked mean or the first ([CLS]) token, optionally
 * L2-normalized. Pure, so the worker and tests share it.
 */
export function poolHidden(hidden: Float32Array, mask: BigInt64Array | undefined, batch: number, seq: number, width: number, pooling: 'mean' | 'cls', normalize: boolean): Float32Array {
  const out = new Float32Array(batch * width);
  for (let b = 0; b < batch; b++) {
    const row = out.subarray(b * width, (b + 1) * width);
    if (pooling === 'cls') {
      row.set(hidden.subarray(b * seq * width, b * seq * width + width));
    } else {
      if (mask === undefined) throw new Error('mean pooling needs the attention mask');
      let count = 0;
      for (let t = 0; t < seq; t++) {
        if (mask[b * seq + t] === 0n) continue;
        count++;
        const offset = (b * seq + t) * width;
        for (let h = 0; h < width; h++) row[h]! += hidden[offset + h]!;
      }
      if (count > 0) for (let h = 0; h < width; h++) row[h]! /= count;
    }
    if (normalize) {
      let norm = 0;
      for (let h = 0; h < width; h++) norm += row[h]! * row[h]!;
      norm = Math.sqrt(norm) || 1;
      for (let h = 0; h < width; h++) row[h]! /= norm;
    }
  }
  return out;
}

/** A float16 value from its 16 bits (IEEE 754 half precision). */
function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

/**
 * A model output as float32: onnxruntime-node hands a float16 output over as its raw 16-bit
 * patterns (a Uint16Array), which read as numbers would be nonsense, silently.
 */
export function outputAsFloat32(type: string, data: unknown, name: string): Float32Array {
  if (type === 'float32') return data as Float32Array;
  if (type === 'float16') {
    const bits = data as ArrayLike<number>;
    // A runtime with Float16Array hands over numbers already, not bit patterns.
    if (!(bits instanceof Uint16Array)) return Float32Array.from(bits);
    const out = new Float32Array(bits.length);
    for (let i = 0; i < bits.length; i++) out[i] = halfToFloat(bits[i]!);
    return out;
  }
  throw new Error(`model output '${name}' is ${type}, not float32 or float16`);
}
