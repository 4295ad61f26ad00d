// What the HTTP probes answer while `cuilink run` loads its index and models. The linker pod's
// startup probe (deploy/k8s/base/linker-statefulset.yaml) is /healthz, the liveness path, with up to
// 5 min (10 on the GPU overlay) "for the index and model load"; the image's HEALTHCHECK has a
// start period for the same. Both hold only if /healthz is not 200 before the load is done: a
// startup probe answered at once hands the pod to liveness (3 × 10 s) while the index, read
// synchronously (names.json, the HNSW graph: GiBs for a large KB), still blocks the process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startStageRuntime } from '../../../src/cli/stage-runtime.ts';
import { stageConfigSchema } from '../../../src/stream/stage-config.ts';
import type { LinkingCore } from '../../../src/link/types.ts';

test('while the linker loads, /healthz and /readyz answer 503 (the startup probe waits for the load); the HTTP server is up', async () => {
  const config = stageConfigSchema.parse({ brokers: ['127.0.0.1:9'], http: { host: '127.0.0.1', port: 0 }, telemetry: { prometheus: false } });
  let url: string | undefined;
  let loading!: () => void;
  const opened = new Promise<void>((resolve) => (loading = resolve));
  let giveUp!: (error: Error) => void;
  const runtime = startStageRuntime(config, {
    logSink: (line) => {
      const entry = JSON.parse(line) as { message: string; url?: string };
      if (entry.message === 'http listening') url = entry.url;
    },
    openCore: () => {
      loading();
      return new Promise<LinkingCore>((_, reject) => (giveUp = reject));
    },
  });
  const failed = assert.rejects(runtime, /load abandoned/);
  await opened;
  assert.ok(url, 'the HTTP server listens before the load');
  const healthz = await fetch(`${url}/healthz`);
  const readyz = await fetch(`${url}/readyz`);
  giveUp(new Error('load abandoned'));
  await failed;
  assert.equal(readyz.status, 503);
  assert.equal(healthz.status, 503, '/healthz is not 200 before the index and models are loaded');
});
