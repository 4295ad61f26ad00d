import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ConsumerRunOptions, InboundRecord, KafkaClient, KafkaConsumerClient, PartitionOffsets } from '../../../src/stream/kafka/client-types.ts';
import { readTopic, readTopicToEnd } from '../../../src/eval/topic-to-end.ts';

function record(partition: number, offset: number): InboundRecord {
  return { topic: 't', partition, offset: String(offset), timestamp: '0', key: null, value: Buffer.from(`${partition}@${offset}`), headers: {} };
}

/**
 * A client whose consumer hands over `batches` (each a partition's records) in order after run()
 * resolved (as the real one does: fetching starts, then batches), then idles; it remembers the
 * run options and can report a crash.
 */
function scriptedClient(offsets: PartitionOffsets[], batches: InboundRecord[][], settledPosition?: KafkaConsumerClient['settledPosition']) {
  const seen = {
    consumers: 0, closed: 0, adminClosed: 0, readCommitted: undefined as boolean | undefined, runs: [] as ConsumerRunOptions[],
    crash: undefined as ((error: unknown, restarting: boolean) => void) | undefined, deliver: undefined as ((records: InboundRecord[]) => Promise<void>) | undefined,
  };
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
        onCrash: (listener) => void (seen.crash = listener),
        run: async (run: ConsumerRunOptions) => {
          seen.runs.push(run);
          connection = setInterval(() => {}, 1000);
          const membership = { groupId: options.groupId, memberId: 'm', generationId: 1 };
          seen.deliver = async (records) => {
            if (!stopped) await run.eachBatch({ topic: 't', partition: records[0]!.partition, messages: records, membership, highWatermark: undefined, isStale: () => stopped });
          };
          setImmediate(async () => {
            for (const records of batches) await seen.deliver!(records);
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

/** A client whose topic holds `records` below the `offsets` it reports, handed over one partition batch each; every run reads from the beginning. */
function fakeClient(offsets: PartitionOffsets[], records: InboundRecord[], settledPosition?: KafkaConsumerClient['settledPosition']) {
  const batches = [...new Set(records.map((r) => r.partition))].map((partition) => records.filter((r) => r.partition === partition));
  const fake = scriptedClient(offsets, batches, settledPosition);
  const consumer = fake.client.consumer.bind(fake.client);
  fake.client.consumer = (options) => {
    const made = consumer(options);
    const run = made.run.bind(made);
    made.run = async (options: ConsumerRunOptions) => {
      assert.equal(options.fromBeginning, true);
      return run(options);
    };
    return made;
  };
  return fake;
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

test('records a restarted consumer hands over again are not handed over twice', async () => {
  // A consumer that failed reads again from where it started (nothing is committed): 0 and 1 come twice.
  const { client } = scriptedClient([{ partition: 0, low: '0', high: '3' }], [[record(0, 0), record(0, 1)], [record(0, 0), record(0, 1), record(0, 2)]]);
  const got: string[] = [];
  await readTopicToEnd(client, 't', 'g', async (r) => void got.push(r.offset), 10_000);
  assert.deepEqual(got, ['0', '1', '2']);
});

test('chosen partitions and start offsets: the consumer starts there, the other partitions at their end, and only the chosen records are handed over', async () => {
  const offsets = [{ partition: 0, low: '0', high: '3' }, { partition: 1, low: '2', high: '6' }];
  const { client, seen } = scriptedClient(offsets, [[record(0, 0), record(0, 1), record(0, 2)], [record(1, 4), record(1, 5)]]);
  const got: string[] = [];
  await readTopic(client, 't', 'g', async (r) => void got.push(`${r.partition}@${r.offset}`), { partitions: [1], startOffsets: new Map([[1, 4n]]) });
  assert.deepEqual(got, ['1@4', '1@5']);
  assert.deepEqual(seen.runs[0]!.startOffsets, [{ topic: 't', partition: 0, offset: '3' }, { topic: 't', partition: 1, offset: '4' }]);
  const plain = scriptedClient(offsets, [[record(0, 0), record(0, 1), record(0, 2)], [record(1, 2), record(1, 3), record(1, 4), record(1, 5)]]);
  await readTopicToEnd(plain.client, 't', 'g', async () => {});
  assert.equal(plain.seen.runs[0]!.startOffsets, undefined, 'a plain read starts where a new group does');
});

test('follow: records past the end are handed over until the signal aborts', async () => {
  const { client, seen } = scriptedClient([{ partition: 0, low: '0', high: '1' }], [[record(0, 0)]]);
  const stop = new AbortController();
  const got: string[] = [];
  const reading = readTopic(client, 't', 'g', async (r) => void got.push(r.offset), { follow: true, signal: stop.signal });
  while (got.length < 1) await new Promise((r) => setTimeout(r, 10));
  await seen.deliver!([record(0, 1), record(0, 2)]);
  assert.deepEqual(got, ['0', '1', '2']);
  stop.abort();
  await reading;
  assert.equal(seen.closed, 1);
});

test('a consumer that gives up for good ends the read with its error; one that restarts is reported and read on', async () => {
  const { client, seen } = scriptedClient([{ partition: 0, low: '0', high: '5' }], []);
  const restarts: unknown[] = [];
  const reading = readTopic(client, 't', 'g', async () => {}, { onRestart: (error) => restarts.push(error) });
  while (seen.crash === undefined || seen.runs.length === 0) await new Promise((r) => setTimeout(r, 10));
  seen.crash(new Error('broker gone a while'), true);
  seen.crash(new Error('broker gone for good'), false);
  await assert.rejects(reading, /broker gone for good/);
  assert.equal(restarts.length, 1);
  assert.equal(seen.closed, 1);
});

test('stallMs: a read to the end that gets nothing for that long fails, retriable', async () => {
  const { client } = scriptedClient([{ partition: 0, low: '0', high: '5' }], [[record(0, 0)]]);
  await assert.rejects(readTopic(client, 't', 'g', async () => {}, { stallMs: 500, timeoutMs: Infinity }), (error: Error & { code?: string; retriable?: boolean }) => error.code === 'TOPIC_READ_STALLED' && error.retriable === true && /t: not read to its end: nothing was read for 500 ms/.test(error.message));
});
