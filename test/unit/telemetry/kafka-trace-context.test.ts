import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { recordSpanContext } from '../../../src/telemetry/kafka-trace-context.ts';
import { startTelemetry } from '../../../src/telemetry/telemetry.ts';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';

test('a record is linked to the trace its own headers carry, whatever span is active where it is read', async () => {
  const telemetry = await startTelemetry({ serviceName: 'test', prometheus: false, spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())] });
  try {
    await telemetry.tracer.startActiveSpan('consume', async (span) => {
      try {
        // Without a (valid) traceparent there is no remote context: not the reader's own span,
        // which would link the record's batch to whatever happened to be active.
        assert.equal(recordSpanContext({}), undefined);
        assert.equal(recordSpanContext(undefined), undefined);
        assert.equal(recordSpanContext({ traceparent: Buffer.from('00-not-a-trace-01') }), undefined);
        assert.equal(recordSpanContext({ traceparent: [Buffer.from(`00-${'0'.repeat(32)}-${PARENT}-01`)] }), undefined);
        const carried = recordSpanContext({ traceparent: Buffer.from(`00-${TRACE}-${PARENT}-01`) });
        assert.deepEqual([carried?.traceId, carried?.spanId, carried?.isRemote], [TRACE, PARENT, true]);
      } finally {
        span.end();
      }
    });
  } finally {
    await telemetry.shutdown();
  }
});
