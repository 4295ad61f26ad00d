import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConsumerRunOptions, InboundRecord, KafkaClient, KafkaConsumerClient, PartitionOffsets } from '../../../src/stream/kafka/client-types.ts';
import { readTopicToEnd } from '../../../src/eval/topic-to-end.ts';

function record(partition: number, offset: number): InboundRecord {
  return { topic: 't', partition, offset: String(offset), timestamp: '0', key: null, value: Buffer.from(`${partition}@${offset}`), headers: {} };
}

/**
 * A client whose topic holds `records` below the `offsets` it reports; its consumer hands them over
 * one partition batch each after run() resolved (as the real one does: fetching starts, then batches).
 */
function fakeClient(offsets: PartitionOffsets[], records: InboundRecord[], settledPosition?: KafkaConsumerClient['settledPosition']) {
  const seen = { consumers: 0, closed: 0, adminClosed: 0, readCommitted: undefined as boolean | undefined };
  const client: KafkaClient = {
    clientId: 'fake',
    admin: () => ({
      topicOffsets: async () => offsets,
      close: async () => void seen.adminClosed++,
    }) as never,
    producer: () => {
      throw new Error('not used');
    },
    consumer: (options) => {
      seen.consumers++;
      seen.readCommitted = options.readCommitted;
      let stopped = false;
      // A real consumer's connections keep the process up while it waits (the reader's own timers do not).
      let connection: NodeJS.Timeout | undefined;
      const consumer: Partial<KafkaConsumerClient> = {
        ...(settledPosition === undefined ? {} : { settledPosition }),
        onJoin: () => {},
        run: async (run: ConsumerRunOptions) => {
          assert.equal(run.fromBeginning, true);
          connection = setInterval(() => {}, 1000);
          setImmediate(async () => {
            for (const partition of new Set(records.map((r) => r.partition))) {
              if (stopped) return;
              const membership = { groupId: options.groupId, memberId: 'm', generationId: 1 };
              await run.eachBatch({ topic: 't', partition, messages: records.filter((r) => r.partition === partition), membership, highWatermark: undefined, isStale: () => stopped });
            }
          });
        },
        close: async () => {
          stopped = true;
          clearInterval(connection);
          seen.closed++;
        },
      };
      return consumer as KafkaConsumerClient;
    },
  };
  return { client, seen };
}

test('an empty topic is read at once, without a consumer', async () => {
  const { client, seen } = fakeClient([{ partition: 0, low: '0', high: '0' }, { partition: 1, low: '5', high: '5' }], []);
  await readTopicToEnd(client, 't', 'g', async () => assert.fail('no record'));
  assert.equal(seen.consumers, 0);
  assert.equal(seen.adminClosed, 1);
});

test('records up to the end offsets are handed over, those written after the call are not', async () => {
  const { client, seen } = fakeClient([{ partition: 0, low: '0', high: '2' }, { partition: 1, low: '3', high: '4' }], [record(0, 0), record(0, 1), record(0, 2), record(1, 3)]);
  const got: string[] = [];
  const started = Date.now();
  await readTopicToEnd(client, 't', 'g', async (r) => void got.push(`${r.partition}@${r.offset}`));
  assert.deepEqual(got, ['0@0', '0@1', '1@3']);
  assert.ok(Date.now() - started < 1000, 'caught up without waiting for the consumer to go idle');
  assert.equal(seen.readCommitted, true);
  assert.equal(seen.closed, 1);
});

test('a partition ending in a transaction marker (never delivered) counts as read once the consumer is idle', async () => {
  // Partition 0: records 0 and 2, markers at 1 and 3; high watermark 4.
  const { client, seen } = fakeClient([{ partition: 0, low: '0', high: '4' }], [record(0, 0), record(0, 2)]);
  const got: string[] = [];
  await readTopicToEnd(client, 't', 'g', async (r) => void got.push(r.offset), 10_000);
  assert.deepEqual(got, ['0', '2']);
  assert.equal(seen.closed, 1);
});

test('more than one offset missing at the end is not guessed at: the read times out', async () => {
  // An aborted transaction's records (4, 5) and its marker (6) are never delivered read-committed.
  const { client, seen } = fakeClient([{ partition: 0, low: '0', high: '7' }], [record(0, 0), record(0, 2)]);
  await assert.rejects(readTopicToEnd(client, 't', 'g', async () => {}, 2500), /t: not read to its end within 2500 ms/);
  assert.equal(seen.closed, 1);
});

test('a tail of aborted records counts as read once the consumer says its fetch position passed it with nothing pending', async () => {
  // As above, the replay ledger after a replay stopped mid-transaction: records 4 and 5 aborted, their marker at 6.
  let handedOver = false;
  const { client, seen } = fakeClient([{ partition: 0, low: '0', high: '7' }], [record(0, 0), record(0, 2)], (topic, partition) => {
    assert.deepEqual([topic, partition], ['t', 0]);
    return handedOver ? '7' : undefined;
  });
  const got: string[] = [];
  await readTopicToEnd(
    client,
    't',
    'g',
    async (r) => {
      got.push(r.offset);
      if (r.offset === '2') handedOver = true;
    },
    10_000,
  );
  assert.deepEqual(got, ['0', '2']);
  assert.equal(seen.closed, 1);
});

test('a settled position short of the end is no proof: more than a marker missing still times out', async () => {
  const { client } = fakeClient([{ partition: 0, low: '0', high: '7' }], [record(0, 0), record(0, 2)], () => '6');
  await assert.rejects(readTopicToEnd(client, 't', 'g', async () => {}, 2500), /t: not read to its end within 2500 ms/);
});

test('onRecord throwing ends the read with that error', async () => {
  const { client, seen } = fakeClient([{ partition: 0, low: '0', high: '3' }], [record(0, 0), record(0, 1), record(0, 2)]);
  const got: string[] = [];
  await assert.rejects(
    readTopicToEnd(client, 't', 'g', async (r) => {
      got.push(r.offset);
      if (r.offset === '1') throw new Error('bad record');
    }),
    /bad record/,
  );
  assert.deepEqual(got, ['0', '1']);
  assert.equal(seen.closed, 1);
});
