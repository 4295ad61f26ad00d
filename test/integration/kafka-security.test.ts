import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CuilinkError } from '../../src/kb/errors.ts';
import { createKafkaClient, type KafkaConnectionConfig } from '../../src/stream/kafka-client.ts';
import type { InboundRecord, KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { connectionOf, loadStageConfig } from '../../src/stream/stage-config.ts';
import { createTestPki, hasOpenssl, SCRAM_USER, startSecureBroker, startTokenEndpoint, type SecureBroker, type TestPki, type TokenEndpoint } from '../support/secure-broker.ts';

/**
 * Issue #28 item 3 on the real broker: one Kafka 3.9 with a SASL_SSL listener (SCRAM-SHA-512,
 * client certificates required) and a SASL_PLAINTEXT OAUTHBEARER listener (Kafka's unsecured JWS
 * validator), configured by test/support/secure-broker.ts; certificates from openssl.
 */

const skip = hasOpenssl() ? false : 'openssl is not installed';
let pki: TestPki;
let broker: SecureBroker;
let endpoint: TokenEndpoint;

before(async () => {
  if (skip !== false) return;
  pki = createTestPki();
  broker = await startSecureBroker(pki);
  endpoint = await startTokenEndpoint({ clientId: 'cuilink-stage', clientSecret: 'stage-secret' });
});

after(async () => {
  await endpoint?.close();
  await broker?.stop();
  pki?.remove();
});

/** A round trip through our interface: create a topic, produce one record, consume it back. */
async function roundTrip(kafka: KafkaClient, topic: string): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.createTopics([{ topic, partitions: 1, replicationFactor: 1 }]);
    const deadline = Date.now() + 30_000;
    while (!(await admin.describeTopics([topic]))[0]?.ready) {
      assert.ok(Date.now() < deadline, `${topic} has a leader within 30 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await admin.close();
  }
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send([{ topic, messages: [{ key: 'note-1', value: Buffer.from(`over ${topic}`), headers: { h: 'v' } }] }]);
  } finally {
    await producer.close();
  }
  const consumer = kafka.consumer({ groupId: `${topic}-reader` });
  try {
    const record = await new Promise<InboundRecord>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`nothing read from ${topic} within 30 s`)), 30_000);
      consumer.onCrash((error, restarting) => {
        if (!restarting) reject(error instanceof Error ? error : new Error(String(error)));
      });
      consumer
        .run({
          topics: [topic],
          fromBeginning: true,
          eachBatch: async ({ messages }) => {
            if (messages[0] === undefined) return;
            clearTimeout(timer);
            resolve(messages[0]);
          },
        })
        .catch(reject);
    });
    assert.equal(record.key?.toString(), 'note-1');
    assert.equal(record.value?.toString(), `over ${topic}`);
    assert.equal(record.headers.h?.toString(), 'v');
  } finally {
    await consumer.close();
  }
}

/** Expects a listTopics through `connection` to fail with one line and `code`; returns the message. */
async function refusal(connection: Omit<KafkaConnectionConfig, 'clientId'>, code: string): Promise<string> {
  const admin = createKafkaClient({ clientId: 'security-refusal', logLevel: 'nothing', retry: { retries: 0 }, requestTimeoutMs: 5000, ...connection }).admin();
  try {
    const error = await admin.listTopics().then(
      () => assert.fail('the connection was accepted'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof CuilinkError, String(error));
    assert.equal(error.code, code, error.message);
    assert.equal(error.retriable, false, `${code} is not retried`);
    assert.doesNotMatch(error.message, /\n/, 'one line');
    return error.message;
  } finally {
    await admin.close();
  }
}

test('TLS from certificate files (CA, client certificate, encrypted key) + SCRAM-SHA-512 from a password file: the stage config produces and consumes', { skip }, async () => {
  const passwordFile = join(pki.dir, 'scram-password');
  writeFileSync(passwordFile, `${SCRAM_USER.password}\n`);
  const config = loadStageConfig({
    env: {
      CUILINK_BROKERS: broker.secure.join(','),
      CUILINK_KAFKA_TLS_CA_FILE: pki.caFile,
      CUILINK_KAFKA_TLS_CERT_FILE: pki.clientCertFile,
      CUILINK_KAFKA_TLS_KEY_FILE: pki.clientKeyFile,
      CUILINK_KAFKA_TLS_KEY_PASSPHRASE_FILE: pki.passphraseFile,
      CUILINK_SASL_MECHANISM: 'scram-sha-512',
      CUILINK_SASL_USERNAME: SCRAM_USER.username,
      CUILINK_SASL_PASSWORD_FILE: passwordFile,
    },
  });
  await roundTrip(createKafkaClient(connectionOf(config), () => {}), 'secure-scram');
});

test('a wrong SCRAM password, an untrusted broker certificate, a missing client certificate: one line each, never retried', { skip }, async () => {
  const ssl = { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile, keyPassphraseFile: pki.passphraseFile };
  const scram = { mechanism: 'scram-sha-512' as const, username: SCRAM_USER.username };
  assert.match(
    await refusal({ brokers: broker.secure, ssl, sasl: { ...scram, password: 'not-the-password' } }, 'KAFKA_SASL_AUTHENTICATION_FAILED'),
    /^list topics: .*\(Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512\)$/,
  );
  assert.match(
    await refusal({ brokers: broker.secure, ssl: { ...ssl, caFile: pki.otherCaFile }, sasl: { ...scram, password: SCRAM_USER.password } }, 'KAFKA_TLS'),
    /\(TLS: the broker's certificate is not trusted: self-signed certificate in certificate chain \(SELF_SIGNED_CERT_IN_CHAIN; check ssl\.caFile\)\)$/,
  );
  assert.match(
    await refusal({ brokers: broker.secure, ssl: { caFile: pki.caFile }, sasl: { ...scram, password: SCRAM_USER.password } }, 'KAFKA_TLS'),
    /\(TLS: the broker refused the client certificate \(.*alert (bad certificate|certificate required).*check ssl\.certFile and ssl\.keyFile\)\)$/,
  );
});

test('SASL OAUTHBEARER: the client fetches a token with the client-credentials grant, once per client, and produces and consumes', { skip }, async () => {
  const before = endpoint.requests.length;
  const kafka = createKafkaClient(
    { brokers: broker.oauth, clientId: 'security-oauth', logLevel: 'error', sasl: { mechanism: 'oauthbearer', tokenEndpoint: endpoint.url, clientId: 'cuilink-stage', clientSecret: 'stage-secret', scope: 'kafka' } },
    () => {},
  );
  await roundTrip(kafka, 'secure-oauth');
  const requests = endpoint.requests.slice(before);
  assert.equal(requests.length, 1, 'the token is cached across connections (admin, producer, consumer)');
  assert.deepEqual(requests[0]!.form, { grant_type: 'client_credentials', scope: 'kafka' });
  assert.equal(requests[0]!.authorization, `Basic ${Buffer.from('cuilink-stage:stage-secret').toString('base64')}`);
});

test('SASL OAUTHBEARER with credentials the token endpoint refuses: one line naming the endpoint and its answer', { skip }, async () => {
  const message = await refusal({ brokers: broker.oauth, sasl: { mechanism: 'oauthbearer', tokenEndpoint: endpoint.url, clientId: 'cuilink-stage', clientSecret: 'wrong' } }, 'OAUTH_TOKEN_REFUSED');
  assert.match(message, new RegExp(`\\(OAuth token endpoint ${endpoint.url.replace(/[.]/g, '\\.')} answered 401 Unauthorized: invalid_client: client authentication failed\\)$`));
});
