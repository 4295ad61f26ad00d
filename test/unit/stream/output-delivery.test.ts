import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CuilinkError } from '../../../src/kb/errors.ts';
import type { InputCommit, KafkaConsumerClient, KafkaProducerClient, TopicRecords } from '../../../src/stream/kafka/client-types.ts';
import { OutputDelivery } from '../../../src/stream/output-delivery.ts';
import { isRetriable, withRetry } from '../../../src/stream/retry.ts';
import { TopicSizeLimits } from '../../../src/stream/topic-size-limits.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';

// Issue #27 item 4 (fixed in fbcf5a7): an at-least-once offset commit that fails is retried on
// its own; the records already acknowledged are not produced a second time.

const retry = { maxAttempts: 4, initialBackoffMs: 1, maxBackoffMs: 2 };
const commit: InputCommit = { topic: 'in', partition: 3, offset: '42', membership: { groupId: 'g', memberId: 'm', generationId: 1 } };
const records: TopicRecords[] = [{ topic: 'out', messages: [{ key: 'n-1', value: 'a' }, { key: 'n-2', value: 'b' }] }];

const coordinatorMoved = () => Object.assign(new Error('NOT_COORDINATOR'), { retriable: true });

function fakes(commitFails: (call: number) => boolean) {
  const counts = { sends: 0, commits: 0 };
  const producer: KafkaProducerClient = {
    async connect() {},
    async send() {
      counts.sends++;
    },
    transaction() {
      throw new Error('not transactional');
    },
    async close() {},
  };
  const consumer = {
    async commit() {
      if (commitFails(++counts.commits)) throw coordinatorMoved();
    },
  } as Partial<KafkaConsumerClient> as KafkaConsumerClient;
  return { counts, producer, consumer };
}

async function deliveryOf(producer: KafkaProducerClient, consumer: KafkaConsumerClient): Promise<OutputDelivery> {
  const sizes = new TopicSizeLimits();
  await sizes.load(undefined as never, ['out'], 1_000_000, createLogger({ level: 'error' }));
  return new OutputDelivery(() => producer, consumer, { delivery: 'at-least-once' }, sizes, retry);
}

test('a commit that fails twice (retriable) then succeeds: one send, three commit calls, the step succeeds', async () => {
  const { counts, producer, consumer } = fakes((call) => call <= 2);
  const delivery = await deliveryOf(producer, consumer);
  await delivery.deliver(records, commit);
  assert.deepEqual(counts, { sends: 1, commits: 3 });
});

test('a commit that always fails: COMMIT_FAILED, not retriable, after one send', async () => {
  const { counts, producer, consumer } = fakes(() => true);
  const delivery = await deliveryOf(producer, consumer);
  const error = await delivery.deliver(records, commit).then(
    () => assert.fail('the step should fail'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof CuilinkError, `a CuilinkError, got ${String(error)}`);
  assert.equal(error.code, 'COMMIT_FAILED');
  assert.equal(error.retriable, false);
  assert.match(error.message, /in\/3.*42/);
  assert.equal(counts.sends, 1);
  assert.equal(counts.commits, retry.maxAttempts, 'the commit alone was retried');
});

test('a commit that always fails, under a caller that retries the whole step (as the handler does): still exactly one send', async () => {
  const { counts, producer, consumer } = fakes(() => true);
  const delivery = await deliveryOf(producer, consumer);
  const error = await withRetry(() => delivery.deliver(records, commit), retry).then(
    () => assert.fail('the step should fail'),
    (e: unknown) => e,
  );
  assert.equal(isRetriable(error), false);
  assert.equal((error as CuilinkError).code, 'COMMIT_FAILED');
  assert.equal(counts.sends, 1, 'the records are not produced again');
});

test('a delivery without a commit (label requests alone) sends and commits nothing', async () => {
  const { counts, producer, consumer } = fakes(() => true);
  const delivery = await deliveryOf(producer, consumer);
  await delivery.deliver(records);
  assert.deepEqual(counts, { sends: 1, commits: 0 });
});

/** A producer as the library behaves: a transaction of a closed producer cannot be aborted (its connection pool is closed). */
function refusingProducers(options: { refuse: () => boolean; connectFails?: () => boolean }) {
  const made: { id: number; closed: boolean }[] = [];
  const make = (): KafkaProducerClient => {
    const state = { id: made.length + 1, closed: false };
    made.push(state);
    const tooLarge = () => new CuilinkError('KAFKA_MESSAGE_TOO_LARGE', 'MESSAGE_TOO_LARGE');
    return {
      async connect() {
        if (options.connectFails?.()) throw new CuilinkError('KAFKA_NETWORK', 'connect ECONNREFUSED', { retriable: true });
      },
      async send() {
        if (state.closed) throw new CuilinkError('KAFKA_NETWORK', 'Client is closed.', { retriable: true });
        if (options.refuse()) throw tooLarge();
      },
      async close() {
        state.closed = true;
      },
      async transaction() {
        return {
          async send() {
            if (options.refuse()) throw tooLarge();
          },
          async commitInput() {},
          async commit() {},
          async abort() {
            if (state.closed) throw new CuilinkError('KAFKA_CLIENT', 'Connection pool is closed.');
          },
        };
      },
    } as unknown as KafkaProducerClient;
  };
  return { make, made };
}

async function sizesFor(topic: string): Promise<TopicSizeLimits> {
  const sizes = new TopicSizeLimits();
  await sizes.load(undefined as never, [topic], 1_000_000, createLogger({ level: 'error' }));
  return sizes;
}

test('exactly-once: a record the broker refuses as too large aborts its transaction first, then the producer is replaced; the step is refused (RECORD_REFUSED), not stuck, and the next step succeeds', async () => {
  let refuse = true;
  const { make, made } = refusingProducers({ refuse: () => refuse });
  const consumer = { async commit() {} } as unknown as KafkaConsumerClient;
  const delivery = new OutputDelivery(make, consumer, { delivery: 'exactly-once' }, await sizesFor('out'));
  await delivery.connect();
  await assert.rejects(delivery.deliver(records, commit), (e: Error & { code?: string }) => e.code === 'RECORD_REFUSED');
  refuse = false;
  await delivery.deliver(records, commit);
  assert.deepEqual(made.map((p) => p.closed), [true, false], 'the refused producer closed, a fresh one delivered');
});

test('at-least-once: after a refusal, a reconnect that fails is tried again at the next step instead of leaving a closed producer behind', async () => {
  let refuse = true;
  let failConnect = false;
  const { make, made } = refusingProducers({ refuse: () => refuse, connectFails: () => failConnect });
  const consumer = { async commit() {} } as unknown as KafkaConsumerClient;
  const delivery = new OutputDelivery(make, consumer, { delivery: 'at-least-once' }, await sizesFor('out'));
  await delivery.connect();
  await assert.rejects(delivery.deliver(records, commit), (e: Error & { code?: string }) => e.code === 'RECORD_REFUSED');
  refuse = false;
  failConnect = true;
  await assert.rejects(delivery.deliver(records, commit), /ECONNREFUSED/);
  failConnect = false;
  await delivery.deliver(records, commit);
  assert.deepEqual(made.map((p) => p.closed), [true, true, false], 'the producer whose connect failed was closed too');
});

test('exactly-once: a commit whose answer is lost (timeout, then the abort cannot reach the broker) is not redone in the process: handed back, the records are in at most one committed transaction', async () => {
  // The coordinator's log: each transaction that reached it with its commit, and what it held.
  const committedTransactions: TopicRecords[][] = [];
  let brokerReachable = true;
  const make = (): KafkaProducerClient => ({
    async connect() {},
    async send() {
      throw new Error('not idempotent-only');
    },
    async close() {},
    async transaction() {
      const sent: TopicRecords[] = [];
      return {
        async send(request: TopicRecords) {
          if (!brokerReachable) throw new CuilinkError('KAFKA_NETWORK', 'connect ECONNREFUSED', { retriable: true });
          sent.push(request);
        },
        async commitInput() {},
        async commit() {
          if (!brokerReachable) throw new CuilinkError('KAFKA_NETWORK', 'connect ECONNREFUSED', { retriable: true });
          // The commit reaches the coordinator and is written; its answer is lost with the broker.
          committedTransactions.push(sent);
          brokerReachable = false;
          setTimeout(() => (brokerReachable = true), 5);
          throw new CuilinkError('KAFKA_TIMEOUT', 'Request timed out', { retriable: true });
        },
        async abort() {
          if (!brokerReachable) throw new CuilinkError('KAFKA_NETWORK', 'connect ECONNREFUSED', { retriable: true });
        },
      };
    },
  });
  const consumer = { async commit() {} } as unknown as KafkaConsumerClient;
  const delivery = new OutputDelivery(make, consumer, { delivery: 'exactly-once' }, await sizesFor('out'));
  await delivery.connect();
  // As the handler does: a retriable failure of the step is retried as a whole.
  const error = await withRetry(() => delivery.deliver(records, commit), { maxAttempts: 5, initialBackoffMs: 10, maxBackoffMs: 20 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.equal(committedTransactions.length, 1, 'the records were committed once, not once more by a redone step');
  assert.ok(error !== undefined && !isRetriable(error), `the step is handed back (not retriable), got ${String(error)}`);
});

test('exactly-once: disconnect() during a step waits for its transaction to end before it closes the producer (no transaction left open)', async () => {
  const events: string[] = [];
  const producer: KafkaProducerClient = {
    async connect() {},
    async send() {},
    async close() {
      events.push('close');
    },
    async transaction() {
      return {
        async send() {
          await new Promise((resolve) => setTimeout(resolve, 20));
          events.push('send');
        },
        async commitInput() {},
        async commit() {
          events.push('commit');
        },
        async abort() {
          events.push('abort');
        },
      };
    },
  };
  const consumer = { async commit() {} } as unknown as KafkaConsumerClient;
  const delivery = new OutputDelivery(() => producer, consumer, { delivery: 'exactly-once' }, await sizesFor('out'));
  await delivery.connect();
  // Label requests of a closed window, sent on the stage's timer while SIGTERM's drain disconnects.
  const step = delivery.deliver(records);
  await new Promise((resolve) => setImmediate(resolve));
  await delivery.disconnect();
  await step.catch(() => {});
  assert.deepEqual(events, ['send', 'commit', 'close']);
});
