import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lengthBatches } from '../../../src/encode/length-batches.ts';
import { poolHidden } from '../../../src/encode/pooling.ts';

const seq = (n: number) => ({ ids: Array.from({ length: n }, (_, i) => 1000 + i), typeIds: new Array<number>(n).fill(0) });

test('batches group similar lengths within both limits and cover every input once', () => {
  const sequences = [seq(30), seq(3), seq(4), seq(29), seq(3), seq(10)];
  const batches = lengthBatches(sequences, ['input_ids', 'attention_mask'], 0, { maxBatch: 2, maxTokens: 64 });
  const seen = batches.flatMap((b) => b.order).sort();
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5]);
  for (const b of batches) {
    const [rows, width] = b.feeds[0]!.dims;
    assert.ok(rows <= 2 && rows * width <= 64);
  }
  assert.deepEqual(batches[0]!.order, [1, 4]);
});

test('feeds are padded with the pad id and masked', () => {
  const [batch] = lengthBatches([seq(2), seq(3)], ['input_ids', 'attention_mask', 'token_type_ids'], 7, { maxBatch: 8, maxTokens: 100 });
  const [ids, mask, types] = batch!.feeds;
  assert.deepEqual(ids!.dims, [2, 3]);
  assert.deepEqual([...ids!.data], [1000n, 1001n, 7n, 1000n, 1001n, 1002n]);
  assert.deepEqual([...mask!.data], [1n, 1n, 0n, 1n, 1n, 1n]);
  assert.equal(types!.name, 'token_type_ids');
});

test('mean pooling ignores padding; cls takes the first token; normalization', () => {
  // batch 1, seq 3, width 2; third token is padding.
  const hidden = Float32Array.from([1, 0, 3, 0, 100, 100]);
  const mask = BigInt64Array.from([1n, 1n, 0n]);
  assert.deepEqual([...poolHidden(hidden, mask, 1, 3, 2, 'mean', false)], [2, 0]);
  assert.deepEqual([...poolHidden(hidden, mask, 1, 3, 2, 'cls', false)], [1, 0]);
  const unit = poolHidden(Float32Array.from([3, 4]), BigInt64Array.from([1n]), 1, 1, 2, 'mean', true);
  assert.ok(Math.abs(unit[0]! - 0.6) < 1e-6 && Math.abs(unit[1]! - 0.8) < 1e-6);
});

test('groups never share a batch and keep their own length order', () => {
  const sequences = [seq(5), seq(3), seq(5), seq(3), seq(4)];
  const batches = lengthBatches(sequences, ['input_ids'], 0, { maxBatch: 8, maxTokens: 1000 }, [7, 9, 9, 7, 7]);
  assert.deepEqual(batches.map((b) => b.order), [[3, 4, 0], [1, 2]]);
});
