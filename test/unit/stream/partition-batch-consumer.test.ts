import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { kGetApi, kGetConnection, kMetadata, ResponseError } from '@platformatic/kafka';
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

/** `startOffset`: where each new stream starts (as the library's 'committed' mode reads it); 0 by default. */
function fakeLibraryConsumer(partitions: number[], startOffset: () => Promise<bigint> = async () => 0n) {
  const consumes: number[] = [];
  const library = {
    generationId: 1,
    memberId: 'm',
    assignments: [],
    closed: false,
    on() {},
    async consume() {
      consumes.push(Date.now());
      const stream = new FakeStream();
      let offset = await startOffset();
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

test('a commit the coordinator refuses because the group moved on is refused, not made again under the generation a rejoin gets', async () => {
  // The broker's side: this member's session ran out (a stalled process) and its partitions went to
  // another member (generation 2) before this client heard of it; it still holds generation 1.
  const brokerGeneration = 2;
  const committed: { generationId: number; partition: number; offset: bigint }[] = [];
  type Topics = { name: string; partitions: { partitionIndex: number; committedOffset: bigint }[] }[];
  const offsetCommit = (_connection: unknown, _group: string, generationId: number, _member: string, _instance: null, topics: Topics, done: (error: unknown) => void) => {
    if (generationId !== brokerGeneration) return done(Object.assign(new Error('Received response with error while executing API OffsetCommit(v9)'), { errors: [Object.assign(new Error('Specified group generation id is not valid.'), { apiId: 'ILLEGAL_GENERATION', canRetry: false })] }));
    for (const t of topics) for (const p of t.partitions) committed.push({ generationId, partition: p.partitionIndex, offset: p.committedOffset });
    done(null);
  };
  const { library } = fakeLibraryConsumer([0]);
  Object.assign(library, {
    coordinatorId: 0,
    // As @platformatic/kafka's Consumer.commit (consumer.js #commit): on ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or
    // REBALANCE_IN_PROGRESS it joins the group again and commits the same offsets under the generation it gets.
    async commit(options: { offsets: { topic: string; partition: number; offset: bigint }[] }) {
      const topics: Topics = options.offsets.map((o) => ({ name: o.topic, partitions: [{ partitionIndex: o.partition, committedOffset: o.offset }] }));
      for (let rejoins = 0; ; rejoins++) {
        const error = await new Promise((resolve) => offsetCommit(null, 'g', library.generationId, library.memberId, null, topics, resolve));
        if (error === null) return;
        if (rejoins >= 3) throw error;
        library.generationId = brokerGeneration;
      }
    },
    [kMetadata]: (_options: unknown, done: (error: unknown, metadata: unknown) => void) => done(null, { brokers: new Map([[0, { host: 'localhost', port: 9092 }]]) }),
    [kGetConnection]: (_broker: unknown, done: (error: unknown, connection: unknown) => void) => done(null, {}),
    [kGetApi]: (name: string, done: (error: unknown, api: unknown) => void) => done(null, name === 'OffsetCommit' ? offsetCommit : undefined),
  });
  const consumer = new PartitionBatchConsumer(() => library as never, { groupId: 'g' });
  await consumer.run({ topics: ['in'], fromBeginning: true, eachBatch: async () => {} });
  const membership = { groupId: 'g', memberId: 'm', generationId: 1, coordinatorId: 0 };
  const refused = await consumer.commit([{ topic: 'in', partition: 0, offset: '5', membership }]).then(() => undefined, (error: unknown) => error);
  await consumer.close();
  assert.deepEqual(committed, [], 'no offset of a partition read under generation 1 is committed under another generation');
  assert.equal((refused as { code?: string } | undefined)?.code, 'KAFKA_ILLEGAL_GENERATION');
});

test('stop() cuts short the wait between restarts that fail (broker unreachable)', async () => {
  const { library, consumes } = fakeLibraryConsumer([0]);
  const consume = library.consume.bind(library);
  // The first read works; every restart after it finds the broker gone.
  library.consume = async () => {
    if (consumes.length >= 1) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9092'), { code: 'PLT_KFK_NETWORK' });
    return consume();
  };
  const consumer = new PartitionBatchConsumer(() => library as never, { groupId: 'g' });
  const crashes: boolean[] = [];
  consumer.onCrash((_error, restarting) => crashes.push(restarting));
  await consumer.run({ topics: ['in'], fromBeginning: true, partitionsConcurrently: 1, eachBatch: async () => {
    throw new Error('handed back');
  } });
  // Restarts fail at ~0, 0.5, 1.5 and 3.5 s (waits of 0.5, 1, 2 s): after the fifth crash the wait is 4 s.
  while (crashes.length < 5) await new Promise((resolve) => setTimeout(resolve, 50));
  const started = Date.now();
  await consumer.close();
  // A hang check, not a speed target: half the 4 s wait that close() used to sit out, however loaded the machine.
  assert.ok(Date.now() - started < 2000, `close took ${Date.now() - started} ms: it waited out the restart backoff`);
});

test('a new owner starts from the offset a finishing transaction committed, not from the one before it (require_stable, KIP-447)', async () => {
  // The coordinator's side: offset 3 is stable; a transaction that committed offset 5 (and the outputs of records 3 and 4)
  // is not finished for its first two answers. Asked without require_stable it answers 3; with it, UNSTABLE_OFFSET_COMMIT.
  const requireStable: boolean[] = [];
  let answersWhilePending = 2;
  const offsetFetch = (_connection: unknown, _groups: unknown[], stable: boolean, done: (error: unknown, response?: unknown) => void) => {
    requireStable.push(stable);
    const pending = answersWhilePending-- > 0;
    if (pending && stable) return done(new ResponseError(9, 9, { '/groups/0/topics/0/partitions/0': [88, null] }, undefined));
    done(null, { groups: [{ groupId: 'g', topics: [{ name: 'in', partitions: [{ partitionIndex: 0, committedOffset: pending ? 3n : 5n }] }] }] });
  };
  // As the library's MessagesStream in 'committed' mode: each stream reads from the committed offset.
  const { library } = fakeLibraryConsumer([0], () => listCommittedOffsets());
  // As @platformatic/kafka's Consumer #listCommittedOffsets (consumer.js): OffsetFetch with require_stable false.
  const listCommittedOffsets = () =>
    new Promise<bigint>((resolve, reject) =>
      (library as unknown as { [kGetApi]: (name: string, done: (error: unknown, api: unknown) => void) => void })[kGetApi]('OffsetFetch', (_error, api) =>
        (api as typeof offsetFetch)(null, [{ groupId: 'g', memberId: 'm', memberEpoch: -1, topics: [{ name: 'in', partitionIndexes: [0] }] }], false, (error, response) =>
          error ? reject(error) : resolve((response as { groups: { topics: { partitions: { committedOffset: bigint }[] }[] }[] }).groups[0]!.topics[0]!.partitions[0]!.committedOffset))));
  Object.assign(library, { [kGetApi]: (name: string, done: (error: unknown, api: unknown) => void) => done(null, name === 'OffsetFetch' ? offsetFetch : undefined) });
  const consumer = new PartitionBatchConsumer(() => library as never, { groupId: 'g' });
  const read: string[] = [];
  await consumer.run({ topics: ['in'], fromBeginning: true, eachBatch: async (batch) => {
    read.push(...batch.messages.map((m) => m.offset));
  } });
  while (read.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  await consumer.close();
  assert.equal(read[0], '5', 'records 3 and 4, whose outputs the transaction committed, are not read again');
  assert.ok(requireStable.length >= 3 && requireStable.every(Boolean), `require_stable of each OffsetFetch: ${requireStable.join(', ')}`);
});

test('a restart whose consume() resolves while stop() runs leaves no stream fetching: stop() closes it too', async () => {
  const { library, consumes } = fakeLibraryConsumer([0]);
  const consume = library.consume.bind(library);
  const streams: FakeStream[] = [];
  let openRestart = () => {};
  const restartOpened = new Promise<void>((resolve) => (openRestart = resolve));
  // The restart's consume() (the second) answers only once stop() has begun.
  library.consume = async () => {
    const restart = consumes.length >= 1;
    const stream = await consume();
    if (restart) await restartOpened;
    streams.push(stream);
    return stream;
  };
  const consumer = new PartitionBatchConsumer(() => library as never, { groupId: 'g' });
  consumer.onCrash(() => {});
  let handedBack = false;
  await consumer.run({ topics: ['in'], fromBeginning: true, partitionsConcurrently: 1, eachBatch: async () => {
    if (handedBack) return;
    handedBack = true;
    throw new Error('handed back');
  } });
  while (consumes.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
  const stopped = consumer.stop();
  openRestart();
  await stopped;
  const closedAtStop = streams.map((s) => s.destroyed);
  // A stream left open keeps fetching (and this process alive): closed here whatever the outcome.
  for (const s of streams) await s.close();
  await consumer.close();
  assert.equal(streams.length, 2, 'the restart did open a second stream');
  assert.deepEqual(closedAtStop, [true, true], 'every stream closed once stop() resolves');
});

test('the settled position is the library\'s next fetch offset (past markers and aborted records), given only while nothing of the partition waits or runs', async () => {
  const stream = Object.assign(new FakeStream(), { readableLength: 0, offsetsToFetch: new Map<string, bigint>() });
  const library = {
    generationId: 1, memberId: 'm', assignments: [], closed: false, on() {},
    async consume() {
      return stream;
    },
    async listOffsets() {
      return new Map();
    },
    close(_force: boolean, done: () => void) {
      done();
    },
  };
  const consumer = new PartitionBatchConsumer(() => library as never, { groupId: 'g' });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const running: string[] = [];
  await consumer.run({ topics: ['in'], fromBeginning: true, eachBatch: async (batch) => {
    running.push(batch.messages.map((m) => m.offset).join());
    await released;
  } });
  assert.equal(consumer.settledPosition('in', 0), undefined, 'not fetched yet');
  // One fetch: record 0, then an aborted transaction's records 1-3 and its marker 4, which the library skips.
  stream.offsetsToFetch.set('in:0', 5n);
  stream.emit('data', { topic: 'in', partition: 0, offset: 0n, timestamp: 0n, key: null, value: Buffer.from('x'), headers: new Map(), metadata: { consumer: { groupId: 'g', memberId: 'm', generationId: 1, coordinatorId: 0 } } });
  assert.deepEqual(running, ['0']);
  assert.equal(consumer.settledPosition('in', 0), undefined, 'record 0 is still being handled');
  release();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(consumer.settledPosition('in', 0), '5');
  stream.readableLength = 1;
  assert.equal(consumer.settledPosition('in', 0), undefined, 'records wait in the stream');
  await consumer.close();
});

test('startOffsets: every fetch stream starts there (the library\'s manual mode), not at the committed offsets', async () => {
  const { library } = fakeLibraryConsumer([0]);
  const asked: unknown[] = [];
  const consume = library.consume.bind(library);
  library.consume = async (options?: unknown) => {
    asked.push(options);
    return consume();
  };
  const plain = new PartitionBatchConsumer(() => library as never, { groupId: 'g' });
  await plain.run({ topics: ['in'], fromBeginning: true, eachBatch: async () => {} });
  await plain.close();
  const seeking = new PartitionBatchConsumer(() => library as never, { groupId: 'g' });
  await seeking.run({ topics: ['in'], fromBeginning: false, startOffsets: [{ topic: 'in', partition: 0, offset: '12' }], eachBatch: async () => {} });
  await seeking.close();
  assert.deepEqual(asked.map((o) => {
    const { mode, fallbackMode, offsets } = o as { mode: string; fallbackMode: string; offsets?: unknown };
    return { mode, fallbackMode, offsets };
  }), [
    { mode: 'committed', fallbackMode: 'earliest', offsets: undefined },
    { mode: 'manual', fallbackMode: 'latest', offsets: [{ topic: 'in', partition: 0, offset: 12n }] },
  ]);
});
