import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConsumerRunOptions, InboundRecord, KafkaClient, KafkaConsumerClient } from '../../../src/stream/kafka/client-types.ts';
import type { RecordCodec } from '../../../src/stream/avro/record-codec.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { readLabelRequestTopic } from '../../../src/eval/annotation/label-request-topic.ts';

const REQUEST = { noteId: 'n1', mentionId: '0-2', start: 0, end: 2, label: 'Disease', stream: 'learn', policy: 'confidence', priority: 0.5, recurrence: 1, conceptId: null, confidence: null, via: null, nil: true, candidates: [], memoryVersion: null, linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', requestedAt: 0 };

function record(offset: number, value: string): InboundRecord {
  return { topic: 'req', partition: 0, offset: String(offset), timestamp: '0', key: null, value: Buffer.from(value), headers: {} };
}

/** A one-partition topic holding `records`; its consumer hands them over in one batch after run() resolved. */
function fakeClient(records: InboundRecord[]): KafkaClient {
  return {
    clientId: 'fake',
    admin: () => ({ topicOffsets: async () => [{ partition: 0, low: '0', high: String(records.length) }], close: async () => {} }) as never,
    producer: () => {
      throw new Error('not used');
    },
    consumer: (options) => {
      let stopped = false;
      const consumer: Partial<KafkaConsumerClient> = {
        onJoin: () => {},
        onCrash: () => {},
        run: async (run: ConsumerRunOptions) => {
          setImmediate(() => void run.eachBatch({ topic: 'req', partition: 0, messages: records, membership: { groupId: options.groupId, memberId: 'm', generationId: 1 }, highWatermark: undefined, isStale: () => stopped }));
        },
        close: async () => {
          stopped = true;
        },
      };
      return consumer as KafkaConsumerClient;
    },
  };
}

/** Decodes 'ok' as the request, 'garbage' as an undecodable record, 'down' as a registry outage. */
const codec = {
  format: 'confluent',
  encode: async () => assert.fail('not used'),
  decode: async (_kind: string, value: Buffer | null) => {
    const text = value!.toString();
    if (text === 'ok') return REQUEST;
    if (text === 'down') throw new CuilinkError('REGISTRY_UNAVAILABLE', 'schema registry: fetch schema 7: connect ECONNREFUSED', { retriable: true });
    throw new CuilinkError('UNDECODABLE', 'value is not a readable LabelRequest Avro record: truncated');
  },
} as unknown as RecordCodec;

test('a record that does not decode is refused with its partition and offset; the others are kept', async () => {
  const batch = await readLabelRequestTopic(fakeClient([record(0, 'ok'), record(1, 'garbage')]), codec, 'req', 5000);
  assert.deepEqual(batch.requests.map((r) => [r.request.noteId, r.where]), [['n1', 'req partition 0 offset 0']]);
  assert.deepEqual(batch.refused.map((r) => r.where), ['req partition 0 offset 1']);
});

test('an unreachable schema registry is a fault of the export, not a bad request: it fails the read instead of refusing the records', async () => {
  await assert.rejects(readLabelRequestTopic(fakeClient([record(0, 'ok'), record(1, 'down')]), codec, 'req', 5000), (e: CuilinkError) => e.code === 'REGISTRY_UNAVAILABLE' && e.retriable);
});
