import type { TokenizedSequence } from '../text/tokenizer.ts';
import type { FeedTensor } from './onnx-worker-protocol.ts';

export interface BatchLimits {
  /** Sequences per run. */
  maxBatch: number;
  /** Padded tokens per run (batch × longest sequence): keeps long-sequence batches small. */
  maxTokens: number;
}

export const CPU_BATCH_LIMITS: BatchLimits = { maxBatch: 64, maxTokens: 64 * 32 };
export const GPU_BATCH_LIMITS: BatchLimits = { maxBatch: 1024, maxTokens: 1024 * 48 };

export interface LengthBatch {
  /** Positions of the batch's sequences in the caller's input. */
  order: number[];
  feeds: FeedTensor[];
}

/**
 * Groups sequences of similar length so padding stays small, and builds the int64 feeds each
 * batch needs. Sorting is stable, so the same input always gives the same batches. With `groups`
 * (one id per sequence) each group is batched on its own: dynamic int8 quantization scales
 * activations per batch tensor, so only then is a sequence's output independent of the others.
 */
export function lengthBatches(sequences: readonly TokenizedSequence[], inputNames: readonly string[], padId: number, limits: BatchLimits, groups?: readonly number[]): LengthBatch[] {
  if (groups !== undefined) {
    const members = new Map<number, number[]>();
    groups.forEach((g, i) => {
      const list = members.get(g);
      if (list) list.push(i);
      else members.set(g, [i]);
    });
    return [...members.values()].flatMap((positions) =>
      lengthBatches(positions.map((i) => sequences[i]!), inputNames, padId, limits).map((b) => ({ ...b, order: b.order.map((j) => positions[j]!) })),
    );
  }
  const byLength = sequences.map((_, i) => i).sort((a, b) => sequences[a]!.ids.length - sequences[b]!.ids.length || a - b);
  const batches: LengthBatch[] = [];
  let start = 0;
  while (start < byLength.length) {
    let end = start + 1;
    while (end < byLength.length && end - start < limits.maxBatch && (end - start + 1) * sequences[byLength[end]!]!.ids.length <= limits.maxTokens) end++;
    const order = byLength.slice(start, end);
    batches.push({ order, feeds: feedsFor(order.map((i) => sequences[i]!), inputNames, padId) });
    start = end;
  }
  return batches;
}

function feedsFor(batch: readonly TokenizedSequence[], inputNames: readonly string[], padId: number): FeedTensor[] {
  const width = Math.max(...batch.map((s) => s.ids.length));
  const ids = new BigInt64Array(batch.length * width).fill(BigInt(padId));
  const mask = new BigInt64Array(batch.length * width);
  const types = new BigInt64Array(batch.length * width);
  batch.forEach((s, row) => {
    for (let t = 0; t < s.ids.length; t++) {
      ids[row * width + t] = BigInt(s.ids[t]!);
      mask[row * width + t] = 1n;
      types[row * width + t] = BigInt(s.typeIds[t]!);
    }
  });
  const all: Record<string, BigInt64Array> = { input_ids: ids, attention_mask: mask, token_type_ids: types };
  return inputNames.map((name) => ({ name, data: all[name]!, dims: [batch.length, width] }));
}
