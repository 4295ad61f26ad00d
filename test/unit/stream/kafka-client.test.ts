import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Kafka } from 'kafkajs';
import { createKafkaClient, parseBrokerList, validateKafkaConnection } from '../../../src/stream/kafka-client.ts';
import { requireTool } from '../../../src/stream/kafka-jars.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';

test('connection config: validated once, defaults filled, bad values named', () => {
  const valid = validateKafkaConnection({ brokers: ['127.0.0.1:9092'] });
  assert.deepEqual(valid, { brokers: ['127.0.0.1:9092'], clientId: 'cuilink', connectionTimeoutMs: 3000, requestTimeoutMs: 30000, logLevel: 'warn' });
  assert.throws(() => validateKafkaConnection({ brokers: [] }), /brokers: at least one broker/);
  assert.throws(() => validateKafkaConnection({ brokers: ['no-port'] }), (e: unknown) => e instanceof CuilinkError && e.code === 'INVALID_CONFIG' && /brokers\.0: a broker is host:port/.test(e.message));
  assert.throws(() => validateKafkaConnection({ brokers: ['h:1'], sasl: { mechanism: 'gssapi' as 'plain', username: 'u', password: 'p' } }), /sasl\.mechanism/);
  assert.ok(createKafkaClient({ brokers: ['h:1'], ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' } }) instanceof Kafka);
  assert.deepEqual(parseBrokerList(' a:1, b:2 ,,'), ['a:1', 'b:2']);
});

test('the local broker names a missing java or mvn instead of failing obscurely', () => {
  const path = process.env.PATH;
  process.env.PATH = '/nonexistent';
  try {
    assert.throws(() => requireTool('java', 'JAVA_NOT_FOUND'), (e: unknown) => e instanceof CuilinkError && e.code === 'JAVA_NOT_FOUND' && /Java 17/.test(e.message));
    assert.throws(() => requireTool('mvn', 'MAVEN_NOT_FOUND'), (e: unknown) => e instanceof CuilinkError && e.code === 'MAVEN_NOT_FOUND');
  } finally {
    process.env.PATH = path;
  }
});
