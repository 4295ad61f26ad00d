import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StageMetrics } from '../../../src/telemetry/stage-metrics.ts';

test('consumer lag grows while a partition stops committing, and a partition handed to another instance is dropped', () => {
  const metrics = new StageMetrics(() => 0);
  metrics.recordLag('notes', 0, '100', '100');
  metrics.recordLag('notes', 1, '900', '400');
  assert.deepEqual(metrics.consumerLag, { 'notes/0': 0, 'notes/1': 500 });
  // The consumer's refreshed high watermarks: partition 1 is stuck (no commit since), its backlog grows.
  const latest: Record<string, string> = { 'notes/0': '100', 'notes/1': '1500' };
  metrics.highWatermarkOf = (topic, partition) => latest[`${topic}/${partition}`];
  assert.deepEqual(metrics.consumerLag, { 'notes/0': 0, 'notes/1': 1100 });
  // A stale refresh never reads lower than the fetch the commit came from.
  latest['notes/1'] = '800';
  assert.equal(metrics.consumerLag['notes/1'], 500);
  metrics.retainPartitions([{ topic: 'notes', partitions: [1] }]);
  assert.deepEqual(Object.keys(metrics.consumerLag), ['notes/1']);
});
