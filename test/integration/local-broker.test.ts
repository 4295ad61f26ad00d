import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { waitForLeaders } from '../support/stream-fixtures.ts';
import { CuilinkError } from '../../src/kb/errors.ts';

test('a local KRaft broker on a free loopback port carries a message from our client\'s producer to its consumer, and stops idempotently', async () => {
  const broker = await startLocalBroker();
  try {
    assert.match(broker.brokers[0]!, /^127\.0\.0\.1:\d+$/);
    const kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'local-broker-test', logLevel: 'error' });
    const admin = kafka.admin();
    try {
      assert.equal((await admin.listTopics()).includes('smoke'), false);
      await admin.createTopics([{ topic: 'smoke', partitions: 1, replicationFactor: 1 }]);
      assert.ok((await admin.listTopics()).includes('smoke'), 'the topic was created');
      await waitForLeaders(admin, ['smoke']);
    } finally {
      await admin.close();
    }

    const producer = kafka.producer();
    await producer.connect();
    await producer.send([{ topic: 'smoke', messages: [{ key: 'note-1', value: Buffer.from('hello'), headers: { h: 'v' } }] }]);
    await producer.close();

    const consumer = kafka.consumer({ groupId: 'local-broker-test' });
    const received = await new Promise<{ key: string; value: string; header: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no message within 30 s')), 30_000);
      consumer
        .run({
          topics: ['smoke'],
          fromBeginning: true,
          eachBatch: async ({ messages }) => {
            const message = messages[0];
            if (message === undefined) return;
            clearTimeout(timer);
            resolve({ key: message.key!.toString(), value: message.value!.toString(), header: String(message.headers.h) });
          },
        })
        .catch(reject);
    });
    await consumer.close();
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
    const kafka = createKafkaClient({ brokers: broker.brokers, logLevel: 'nothing', retry: { retries: 1 }, requestTimeoutMs: 2000 });
    const producer = kafka.producer();
    await producer.connect();
    // Within a bound (kafkajs' send had `timeout: 2000`): a send that never settles fails the test instead of hanging it.
    const outcome = await Promise.race([
      producer.send([{ topic: 'never-created', messages: [{ value: 'x' }] }]).then(() => 'sent', (error: unknown) => ({ rejected: error })),
      new Promise<string>((resolve) => setTimeout(() => resolve('still pending after 30 s'), 30_000).unref()),
    ]);
    assert.ok(typeof outcome === 'object', `producing to an unknown topic fails: ${String(outcome)}`);
    await producer.close();
    const admin = kafka.admin();
    assert.equal((await admin.listTopics()).includes('never-created'), false);
    await admin.close();
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
    await admin.createTopics([{ topic: 'kept', partitions: 1, replicationFactor: 1 }]);
    await waitForLeaders(admin, ['kept']);
    await admin.close();
    const producer = kafka.producer();
    await producer.connect();
    await producer.send([{ topic: 'kept', messages: [{ value: 'survives' }] }]);
    await producer.close();
    await broker.stop();
    assert.ok(existsSync(join(dataDir, 'data', 'meta.properties')), 'a given data dir is kept');

    broker = await startLocalBroker({ dataDir });
    try {
      kafka = createKafkaClient({ brokers: broker.brokers, logLevel: 'nothing' });
      const again = kafka.admin();
      assert.ok((await again.listTopics()).includes('kept'));
      const offsets = await again.topicOffsets('kept');
      await again.close();
      assert.equal(offsets[0]!.high, '1');
    } finally {
      await broker.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a process killed outright (Ctrl-C, SIGKILL) leaves neither its broker nor the temporary data dir behind; a broker that cannot start leaves no dir either', async () => {
  const { spawn } = await import('node:child_process');
  const { readdirSync } = await import('node:fs');
  const script = "import { startLocalBroker } from './src/stream/local-broker.ts'; const b = await startLocalBroker(); console.log(JSON.stringify({ pid: b.pid, dataDir: b.dataDir })); setInterval(() => {}, 1000);";
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const started = await new Promise<{ pid: number; dataDir: string }>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line) as { pid: number; dataDir: string });
    });
    child.once('exit', (code) => reject(new Error(`the child exited (${code}) before its broker started`)));
  });
  assert.ok(existsSync(started.dataDir));
  child.kill('SIGKILL');
  const alive = () => {
    try {
      process.kill(started.pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + 30_000;
  while ((alive() || existsSync(started.dataDir)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  assert.equal(alive(), false, 'the broker was stopped by its watchdog');
  assert.equal(existsSync(started.dataDir), false, 'the temporary data dir was removed');

  const before = new Set(readdirSync(tmpdir()).filter((n) => n.startsWith('cuilink-kafka-')));
  await assert.rejects(startLocalBroker({ listeners: [{ name: 'PLAINTEXT', protocol: 'SASL_PLAINTEXT' }] }), /listener name/);
  assert.deepEqual(readdirSync(tmpdir()).filter((n) => n.startsWith('cuilink-kafka-') && !before.has(n)), [], 'no data dir left by a broker that never started');
});

test('a port already taken by another Kafka broker fails the start, instead of that broker answering the probe for ours', async () => {
  const other = await startLocalBroker();
  const dataDir = mkdtempSync(join(tmpdir(), 'cuilink-kafka-taken-'));
  try {
    const port = Number(other.brokers[0]!.split(':')[1]);
    await assert.rejects(startLocalBroker({ port, dataDir, startTimeoutMs: 20_000 }), (e: unknown) => e instanceof CuilinkError && e.code === 'BROKER_START_FAILED' && e.message.includes(`port ${port}`) && /in use/.test(e.message));
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    await other.stop();
  }
});

test('died: settles with how the JVM ended when the broker exits on its own; a stopped broker never settles it', async () => {
  const broker = await startLocalBroker();
  process.kill(broker.pid, 'SIGKILL');
  assert.match(await broker.died, /^signal SIGKILL; the end of its server\.log: /);
  await broker.stop();

  const stopped = await startLocalBroker();
  await stopped.stop();
  const outcome = await Promise.race([stopped.died.then(() => 'settled'), new Promise((resolve) => setTimeout(() => resolve('pending'), 500))]);
  assert.equal(outcome, 'pending');
});
