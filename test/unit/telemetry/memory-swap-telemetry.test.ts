import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { activateMemoryVersion } from '../../../src/retrieve/memory-root.ts';
import { parseLinkConfig } from '../../../src/link/link-config.ts';
import { MemoryWatcher } from '../../../src/link/memory-watcher.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { MemorySwapTelemetry, memorySequence } from '../../../src/telemetry/memory-swap-telemetry.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

const encoder = new TrigramEncoder();
const MODEL = { id: 'test-trigram-encoder', sha256: 'd'.repeat(64), dims: encoder.dims };
const SECRET = 'zorbitis xq';
let root: string;
let index: LinkIndex;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-memory-swaps-'));
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder,
    model: { path: 'm', sha256: MODEL.sha256, precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false,
  });
  index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
});
after(() => rmSync(root, { recursive: true, force: true }));

function addVersion(memRoot: string, store: MemoryStore, text: string): string {
  store.add([{ text, label: 'Disease', ids: ['MESH:D003920'], source: 'test', time: 1 }], [encoder.vector(text)]);
  const { memoryVersion } = store.save(memRoot);
  activateMemoryVersion(memRoot, memoryVersion);
  return memoryVersion;
}

test('memorySequence reads the sequence a version name starts with', () => {
  assert.equal(memorySequence('000007-3fa1c2d9e0'), 7);
  assert.equal(memorySequence('hand-made'), 0);
});

test('a swap is logged once (version, no text) and counted; a version that fails to load is logged and counted once, however often it is polled', async () => {
  const memRoot = join(root, 'mem');
  const store = MemoryStore.empty(MODEL, lowerNormalize);
  const v1 = addVersion(memRoot, store, SECRET);
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  const provider = new MeterProvider({ readers: [exporter] });
  const text = async () => new PrometheusSerializer(undefined, false, undefined, false, true).serialize((await exporter.collect()).resourceMetrics);
  // The stage's wiring (src/cli/stage-runtime.ts): the watcher reports to the telemetry, which reads the version served.
  const watcher = MemoryWatcher.open({
    path: memRoot, index, config: parseLinkConfig({}).memory, normalize: lowerNormalize, modelSha256: MODEL.sha256, pollMs: 0,
    onSwap: (version) => telemetry.swapped(version), onError: (error, version) => telemetry.failed(error, version),
  });
  const telemetry = new MemorySwapTelemetry(logger, () => watcher.current()?.version, provider.getMeter('test'));
  try {
    // The version opened with is served, not a swap; every series exists from start.
    let metrics = await text();
    assert.match(metrics, /^cuilink_stream_memory_swaps_total 0$/m);
    assert.match(metrics, /^cuilink_stream_memory_load_failures_total\{code="BAD_MEMORY"\} 0$/m);
    assert.match(metrics, /^cuilink_stream_memory_sequence 1$/m);
    assert.equal(lines.length, 0);

    const v2 = addVersion(memRoot, store, 'lung fire');
    assert.equal(watcher.poll(), true);
    assert.equal(watcher.poll(), false, 'nothing new: no second line');
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.message, 'memory swapped');
    assert.equal(lines[0]!.memoryVersion, v2);
    assert.deepEqual(telemetry.counts, { swaps: 1, loadFailures: 0, loadFailuresByCode: {} });
    metrics = await text();
    assert.match(metrics, /^cuilink_stream_memory_swaps_total 1$/m);
    assert.match(metrics, /^cuilink_stream_memory_sequence 2$/m);

    writeFileSync(join(memRoot, 'CURRENT'), 'no-such-version\n');
    for (let i = 0; i < 3; i++) assert.equal(watcher.poll(), false);
    assert.equal(lines.length, 2);
    assert.equal(lines[1]!.level, 'warn');
    assert.equal(lines[1]!.memoryVersion, 'no-such-version');
    assert.equal(lines[1]!.servingVersion, v2);
    assert.equal(lines[1]!.code, 'BAD_MEMORY');
    assert.equal(telemetry.counts.loadFailures, 1);
    metrics = await text();
    assert.match(metrics, /^cuilink_stream_memory_load_failures_total\{code="BAD_MEMORY"\} 1$/m);
    assert.match(metrics, /^cuilink_stream_memory_sequence 2$/m, 'the old version keeps serving');

    // Rollback: CURRENT names a good version again and the watcher swaps to it.
    activateMemoryVersion(memRoot, v1);
    assert.equal(watcher.poll(), true);
    assert.equal(lines.at(-1)!.memoryVersion, v1);
    assert.equal(telemetry.counts.swaps, 2);
    assert.ok(!lines.some((l) => JSON.stringify(l).includes(SECRET)), 'no label text in the log');
    assert.ok(!(await text()).includes(SECRET), 'no label text in the metrics');
  } finally {
    watcher.close();
    await provider.shutdown();
  }
});
