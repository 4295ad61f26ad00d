import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
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

test('a partition handed to another instance is exported at 0, not at its last lag for the life of the process', async () => {
  // The SDK keeps exporting every attribute set an observable gauge once reported: a partition
  // merely no longer observed would show its old backlog here while its new owner reports it too.
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = new MeterProvider({ readers: [exporter] });
  const metrics = new StageMetrics(() => 0, provider.getMeter('test'));
  const lag = async () => {
    const { resourceMetrics } = await exporter.collect();
    const text = new PrometheusSerializer().serialize(resourceMetrics);
    return Object.fromEntries([...text.matchAll(/^cuilink_stream_consumer_lag\{[^}]*partition="(\d+)"[^}]*\} (\S+)/gm)].map((m) => [m[1]!, Number(m[2])]));
  };
  metrics.recordLag('notes', 0, '100', '50');
  metrics.recordLag('notes', 1, '900', '400');
  assert.deepEqual(await lag(), { 0: 50, 1: 500 });
  metrics.retainPartitions([{ topic: 'notes', partitions: [1] }]);
  assert.deepEqual(await lag(), { 0: 0, 1: 500 });
  // Handed back later: its own lag again.
  metrics.retainPartitions([{ topic: 'notes', partitions: [0, 1] }]);
  metrics.recordLag('notes', 0, '300', '280');
  assert.deepEqual(await lag(), { 0: 20, 1: 500 });
  await provider.shutdown();
});
