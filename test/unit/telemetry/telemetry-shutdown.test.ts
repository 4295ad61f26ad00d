import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTelemetry } from '../../../src/telemetry/telemetry.ts';

test('shutdown with a collector that does not answer resolves and reports the lost flush (a clean drain still exits 0)', async () => {
  const errors: unknown[] = [];
  const telemetry = await startTelemetry({ serviceName: 'test', otlpEndpoint: 'http://127.0.0.1:1', prometheus: false, onShutdownError: (error) => errors.push(error) });
  telemetry.tracer.startSpan('unexported').end();
  await telemetry.shutdown();
  assert.equal(errors.length, 1);
  await telemetry.shutdown(); // idempotent: the same settled promise
});
