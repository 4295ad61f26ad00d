/**
 * [batch, seq, hidden] → [batch, hidden]: masked mean or the first ([CLS]) token, optionally
 * L2-normalized. Pure, so the worker and tests share it.
 */
export function poolHidden(hidden: Float32Array, mask: BigInt64Array, batch: number, seq: number, width: number, pooling: 'mean' | 'cls', normalize: boolean): Float32Array {
  const out = new Float32Array(batch * width);
  for (let b = 0; b < batch; b++) {
    const row = out.subarray(b * width, (b + 1) * width);
    if (pooling === 'cls') {
      row.set(hidden.subarray(b * seq * width, b * seq * width + width));
    } else {
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
