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
