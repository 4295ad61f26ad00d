import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brokerFailureLine, isBrokerFailure } from '../../../src/cli/broker-failure.ts';
import { CuilinkError, InputError } from '../../../src/kb/errors.ts';
import { createKafkaClient } from '../../../src/stream/kafka-client.ts';

test('a broker failure is exit-3 material and its one line names the broker when the cause does not', () => {
  createKafkaClient({ brokers: ['kafka-7.invalid:9093'] }, () => {});
  const timedOut = new CuilinkError('KAFKA_NETWORK', 'list topics: metadata failed 4 times. (Connection closed)', { retriable: true });
  assert.ok(isBrokerFailure(timedOut));
  assert.equal(brokerFailureLine(timedOut), 'cannot reach the Kafka broker kafka-7.invalid:9093: list topics: metadata failed 4 times. (Connection closed)');
  // A cause that already names it is left as it is.
  const refused = new CuilinkError('KAFKA_NETWORK', 'list topics: metadata failed 4 times. (connect ECONNREFUSED kafka-7.invalid:9093)', { retriable: true });
  assert.equal(brokerFailureLine(refused), refused.message);
  // Flag and config errors, and anything not from Kafka, stay exit 2.
  assert.ok(!isBrokerFailure(new InputError('brokers.0: a broker is host:port', 'KAFKA_BAD_FLAG')));
  assert.ok(!isBrokerFailure(new CuilinkError('REGISTRY_UNAVAILABLE', 'registry down', { retriable: true })));
  assert.ok(!isBrokerFailure(new Error('KAFKA_NETWORK')));
});

test('any other error keeps its message', () => {
  const error = new CuilinkError('TOPIC_MISSING', 'topic cuilink.gold does not exist', { retriable: false });
  assert.equal(brokerFailureLine(error), error.message);
});
