import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createKafkaClient, parseBrokerList, validateKafkaConnection, type KafkaLogSink } from '../../../src/stream/kafka-client.ts';
import { requireTool } from '../../../src/stream/kafka-jars.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';

test('connection config: validated once, defaults filled, bad values named', () => {
  const valid = validateKafkaConnection({ brokers: ['127.0.0.1:9092'] });
  assert.deepEqual(valid, { brokers: ['127.0.0.1:9092'], clientId: 'cuilink', connectionTimeoutMs: 3000, requestTimeoutMs: 30000, logLevel: 'warn' });
  assert.throws(() => validateKafkaConnection({ brokers: [] }), /brokers: at least one broker/);
  assert.throws(() => validateKafkaConnection({ brokers: ['no-port'] }), (e: unknown) => e instanceof CuilinkError && e.code === 'INVALID_CONFIG' && /brokers\.0: a broker is host:port/.test(e.message));
  assert.throws(() => validateKafkaConnection({ brokers: ['h:1'], sasl: { mechanism: 'gssapi' as 'plain', username: 'u', password: 'p' } }), /sasl\.mechanism/);
  // TLS and SASL map onto a client without touching the network (nothing listens on h:1); the client carries its id.
  const client = createKafkaClient({ brokers: ['h:1'], ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' } });
  assert.equal(client.clientId, 'cuilink');
  for (const method of ['admin', 'producer', 'consumer'] as const) assert.equal(typeof client[method], 'function', method);
  assert.equal(createKafkaClient({ brokers: ['h:1'], clientId: 'stage-7' }).clientId, 'stage-7');
  // The factory validates too: a bad config never reaches the library, and the error names the field.
  assert.throws(() => createKafkaClient({ brokers: ['no-port'] }), (e: unknown) => e instanceof CuilinkError && e.code === 'INVALID_CONFIG' && /brokers\.0: a broker is host:port/.test(e.message));
  assert.throws(() => createKafkaClient({ brokers: ['h:1'], logLevel: 'loud' as 'warn' }), (e: unknown) => e instanceof CuilinkError && e.code === 'INVALID_CONFIG' && /logLevel/.test(e.message));
  assert.deepEqual(parseBrokerList(' a:1, b:2 ,,'), ['a:1', 'b:2']);
});

test('an unreachable broker: the call fails with a retriable KAFKA_NETWORK error, and the log sink hears of it at warn, not below', async () => {
  for (const logLevel of ['warn', 'error'] as const) {
    const entries: Parameters<KafkaLogSink>[0][] = [];
    // Nothing listens on port 9 of the loopback: the connection is refused at once.
    const client = createKafkaClient({ brokers: ['127.0.0.1:9'], logLevel, retry: { retries: 0 }, connectionTimeoutMs: 1000 }, (entry) => entries.push(entry));
    const admin = client.admin();
    try {
      await assert.rejects(admin.listTopics(), (e: unknown) => e instanceof CuilinkError && e.code === 'KAFKA_NETWORK' && e.retriable && /list topics/.test(e.message));
    } finally {
      await admin.close();
    }
    const expected = logLevel === 'warn' ? [{ level: 'warn', namespace: 'connection', message: 'cannot connect to broker; retrying', extra: { broker: '127.0.0.1:9' } }] : [];
    assert.deepEqual(entries, expected, `logLevel ${logLevel}`);
  }
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

test('a record whose header key repeats keeps every value, each key\'s in order, as far as the dead letter', async () => {
  const { toInboundRecord } = await import('../../../src/stream/kafka/platformatic-client.ts');
  const { headersToAvro } = await import('../../../src/stream/avro/avro-conversions.ts');
  const headers = new Map<Buffer, Buffer>([[Buffer.from('x-route'), Buffer.from('a')], [Buffer.from('trace'), Buffer.from('t')], [Buffer.from('x-route'), Buffer.from('b')]]);
  const record = toInboundRecord({ topic: 't', partition: 0, offset: 5n, timestamp: 0n, key: Buffer.from('n1'), value: Buffer.from('v'), headers, metadata: {} } as never);
  assert.deepEqual(headersToAvro(record.headers).map((h) => `${h.key}=${String(h.value)}`), ['x-route=a', 'x-route=b', 'trace=t']);
});

test("headers named like Object members ('constructor', '__proto__') are kept as headers and reach the dead letter", async () => {
  const { toInboundRecord } = await import('../../../src/stream/kafka/platformatic-client.ts');
  const { headersToAvro } = await import('../../../src/stream/avro/avro-conversions.ts');
  const headers = new Map<Buffer, Buffer>([[Buffer.from('constructor'), Buffer.from('c')], [Buffer.from('__proto__'), Buffer.from('p')], [Buffer.from('toString'), Buffer.from('s')]]);
  const record = toInboundRecord({ topic: 't', partition: 0, offset: 5n, timestamp: 0n, key: null, value: Buffer.from('v'), headers, metadata: {} } as never);
  assert.deepEqual(headersToAvro(record.headers).map((h) => `${h.key}=${String(h.value)}`), ['constructor=c', '__proto__=p', 'toString=s']);
});
