import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';

test('a local KRaft broker on a free loopback port carries a message from kafkajs producer to consumer, and stops idempotently', async () => {
  const broker = await startLocalBroker();
  try {
    assert.match(broker.brokers[0]!, /^127\.0\.0\.1:\d+$/);
    const kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'local-broker-test', logLevel: 'error' });
    const admin = kafka.admin();
    await admin.connect();
    assert.equal(await admin.createTopics({ topics: [{ topic: 'smoke', numPartitions: 1 }], waitForLeaders: true }), true);
    await admin.disconnect();

    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    await producer.send({ topic: 'smoke', messages: [{ key: 'note-1', value: Buffer.from('hello'), headers: { h: 'v' } }] });
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: 'local-broker-test' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'smoke', fromBeginning: true });
    const received = await new Promise<{ key: string; value: string; header: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no message within 30 s')), 30_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          clearTimeout(timer);
          resolve({ key: message.key!.toString(), value: message.value!.toString(), header: String(message.headers!.h) });
        },
      });
    });
    await consumer.disconnect();
    assert.deepEqual(received, { key: 'note-1', value: 'hello', header: 'v' });
  } finally {
    await broker.stop();
  }
  assert.throws(() => process.kill(broker.pid, 0), 'the broker process is gone after stop');
  assert.equal(existsSync(broker.dataDir), false, 'a temporary data dir is removed');
  await broker.stop();
});

test('auto topic creation is off: producing to an unknown topic fails instead of creating it', async () => {
  const broker = await startLocalBroker();
  try {
    const kafka = createKafkaClient({ brokers: broker.brokers, logLevel: 'nothing', retry: { retries: 1 } });
    const producer = kafka.producer();
    await producer.connect();
    await assert.rejects(producer.send({ topic: 'never-created', messages: [{ value: 'x' }], timeout: 2000 }));
    await producer.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    assert.equal((await admin.listTopics()).includes('never-created'), false);
    await admin.disconnect();
  } finally {
    await broker.stop();
  }
});

test('a broker on a kept data dir restarts with its topics and messages (storage is formatted once)', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cuilink-kafka-kept-'));
  try {
    let broker = await startLocalBroker({ dataDir });
    let kafka = createKafkaClient({ brokers: broker.brokers, logLevel: 'nothing' });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'kept', numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'kept', acks: -1, messages: [{ value: 'survives' }] });
    await producer.disconnect();
    await broker.stop();
    assert.ok(existsSync(join(dataDir, 'data', 'meta.properties')), 'a given data dir is kept');

    broker = await startLocalBroker({ dataDir });
    try {
      kafka = createKafkaClient({ brokers: broker.brokers, logLevel: 'nothing' });
      const again = kafka.admin();
      await again.connect();
      assert.ok((await again.listTopics()).includes('kept'));
      const offsets = await again.fetchTopicOffsets('kept');
      await again.disconnect();
      assert.equal(offsets[0]!.high, '1');
    } finally {
      await broker.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
