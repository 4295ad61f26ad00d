import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { handBackDelayMs, PartitionBatchConsumer } from '../../../src/stream/kafka/partition-batch-consumer.ts';

/** The library's record stream: every consume() gives a new one that delivers a record every 20 ms, from offset 0 again (nothing was committed). */
class FakeStream extends EventEmitter {
  destroyed = false;
  pause(): void {}
  resume(): void {}
  async close(): Promise<void> {
    this.destroyed = true;
  }
}

function fakeLibraryConsumer(partitions: number[]) {
  const consumes: number[] = [];
  const library = {
    generationId: 1,
    memberId: 'm',
    assignments: [],
    on() {},
    async consume() {
      consumes.push(Date.now());
      const stream = new FakeStream();
      let offset = 0n;
      const emit = () => {
        if (stream.destroyed) return;
        for (const partition of partitions) {
          stream.emit('data', {
            topic: 'in', partition, offset, timestamp: BigInt(Date.now()), key: null, value: Buffer.from('x'), headers: new Map(),
            metadata: { consumer: { groupId: 'g', memberId: 'm', generationId: 1, coordinatorId: 0 } },
          });
        }
        offset++;
        setTimeout(emit, 20);
      };
      setImmediate(emit);
      return stream;
    },
    async listOffsets() {
      return new Map();
    },
    close(_force: boolean, done: () => void) {
      done();
    },
  };
  return { library, consumes };
}

test('a batch handed back again and again is read again after a growing wait, not in a tight loop', async () => {
  const { library, consumes } = fakeLibraryConsumer([0]);
  const consumer = new PartitionBatchConsumer(() => library as never, { groupId: 'g' });
  const crashes: unknown[] = [];
  consumer.onCrash((error) => crashes.push(error));
  await consumer.run({ topics: ['in'], fromBeginning: true, partitionsConcurrently: 1, eachBatch: async () => {
    throw new Error('the output topic refuses us');
  } });
  await new Promise((resolve) => setTimeout(resolve, 1_200));
  await consumer.close();
  // Immediately after the first hand-back, 0.5 s after the second, 1 s after the third: a tight loop read it dozens of times.
  assert.ok(consumes.length >= 2 && consumes.length <= 3, `reads of the partition in 1.2 s: ${consumes.length}`);
  if (consumes.length === 3) assert.ok(consumes[2]! - consumes[1]! >= 450, `waited ${consumes[2]! - consumes[1]!} ms before the third read`);
  assert.ok(crashes.length >= 2);
});

test('the wait doubles from 0.5 s to at most 10 s; a completed batch of the partition starts it over', async () => {
  assert.deepEqual([2, 3, 4, 6, 7, 50].map(handBackDelayMs), [500, 1000, 2000, 8000, 10_000, 10_000]);
  let calls = 0;
  const { library, consumes } = fakeLibraryConsumer([0]);
  const consumer = new PartitionBatchConsumer(() => library as never, { groupId: 'g' });
  consumer.onCrash(() => {});
  // Fails, succeeds, then fails: the success started the count over, so the third read follows at once (else after 0.5 s).
  await consumer.run({ topics: ['in'], fromBeginning: true, partitionsConcurrently: 1, eachBatch: async () => {
    calls++;
    if (calls !== 2) throw new Error('handed back');
  } });
  while (consumes.length < 3) await new Promise((resolve) => setTimeout(resolve, 10));
  await consumer.close();
  assert.ok(calls >= 3);
  assert.ok(consumes[2]! - consumes[1]! < 400, `the third read came ${consumes[2]! - consumes[1]!} ms after the second`);
});

test('stop() cuts a hand-back wait short', async () => {
  const { library } = fakeLibraryConsumer([0]);
  const consumer = new PartitionBatchConsumer(() => library as never, { groupId: 'g' });
  consumer.onCrash(() => {});
  await consumer.run({ topics: ['in'], fromBeginning: true, partitionsConcurrently: 1, eachBatch: async () => {
    throw new Error('handed back');
  } });
  await new Promise((resolve) => setTimeout(resolve, 100)); // two hand-backs: waiting 0.5 s now
  const started = Date.now();
  await consumer.close();
  assert.ok(Date.now() - started < 300, `close took ${Date.now() - started} ms`);
});
