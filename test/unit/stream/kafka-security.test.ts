import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CuilinkError, InputError } from '../../../src/kb/errors.ts';
import { kafkaRequest } from '../../../src/cli/kafka-flags.ts';
import { createKafkaClient, resolveKafkaSecurity, validateKafkaConnection } from '../../../src/stream/kafka-client.ts';
import { KAFKA_SECURITY_ENV_VARS, OidcTokenProvider, resolveTls } from '../../../src/stream/kafka-security.ts';
import { ENV_VARS, loadStageConfig } from '../../../src/stream/stage-config.ts';
import { createTestPki, hasOpenssl, KEY_PASSPHRASE, startTokenEndpoint, type TestPki, type TokenEndpoint } from '../../support/secure-broker.ts';

const skip = hasOpenssl() ? false : 'openssl is not installed';
let pki: TestPki;
let dir: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cuilink-kafka-security-'));
  if (skip === false) pki = createTestPki();
});
after(() => {
  rmSync(dir, { recursive: true, force: true });
  pki?.remove();
});

/** The message of the InputError `run` throws; it must be one line. */
function inputErrorOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof InputError, `an InputError, got ${String(error)}`);
    assert.doesNotMatch(error.message, /\n/, 'one line');
    return error.message;
  }
  assert.fail('expected an InputError');
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

test('the stage reads TLS files and SCRAM password file from CUILINK_* variables at start, and the client gets their contents', { skip }, () => {
  const passwordFile = file('scram-password', 'alice-secret\n');
  const env = {
    CUILINK_SSL: 'true',
    CUILINK_KAFKA_TLS_CA_FILE: pki.caFile,
    CUILINK_KAFKA_TLS_CERT_FILE: pki.clientCertFile,
    CUILINK_KAFKA_TLS_KEY_FILE: pki.clientKeyFile,
    CUILINK_KAFKA_TLS_KEY_PASSPHRASE_FILE: pki.passphraseFile,
    CUILINK_SASL_MECHANISM: 'scram-sha-512',
    CUILINK_SASL_USERNAME: 'alice',
    CUILINK_SASL_PASSWORD_FILE: passwordFile,
  };
  const config = loadStageConfig({ env });
  assert.deepEqual(config.ssl, { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile, keyPassphraseFile: pki.passphraseFile });
  const security = resolveKafkaSecurity(validateKafkaConnection({ brokers: ['h:1'], ssl: config.ssl, sasl: config.sasl }));
  assert.equal(security.tls?.ca, readFileSync(pki.caFile, 'utf8'));
  assert.equal(security.tls?.cert, readFileSync(pki.clientCertFile, 'utf8'));
  assert.equal(security.tls?.passphrase, KEY_PASSPHRASE, 'the trailing newline of the passphrase file is dropped');
  assert.deepEqual(security.sasl, { mechanism: 'SCRAM-SHA-512', username: 'alice', password: 'alice-secret' });
  // A TLS file variable alone turns TLS on; a config file's `ssl` object takes the same fields.
  assert.deepEqual(loadStageConfig({ env: { CUILINK_KAFKA_TLS_CA_FILE: pki.caFile } }).ssl, { caFile: pki.caFile });
  const configFile = file('stage.json', JSON.stringify({ ssl: { caFile: pki.caFile, servername: 'kafka.internal' } }));
  assert.deepEqual(loadStageConfig({ file: configFile, env: {} }).ssl, { caFile: pki.caFile, servername: 'kafka.internal' });
  // The Kafka tools read the same variables.
  assert.deepEqual(kafkaRequest({ brokers: 'h:1' }, 'tool', env).connection.ssl, config.ssl);
});

test('a bad TLS file stops the start with one line naming the variable or config field and the file', { skip }, () => {
  const missing = join(dir, 'nope', 'ca.pem');
  assert.equal(
    inputErrorOf(() => loadStageConfig({ env: { CUILINK_KAFKA_TLS_CA_FILE: missing } })),
    `environment variable CUILINK_KAFKA_TLS_CA_FILE: 'ssl.caFile': cannot read ${missing} (no such file)`,
  );
  const notPem = file('not-pem.txt', 'hello\n');
  const configFile = file('stage-bad-ca.json', JSON.stringify({ ssl: { caFile: notPem } }));
  assert.equal(inputErrorOf(() => loadStageConfig({ file: configFile, env: {} })), `config ${configFile}: 'ssl.caFile': ${notPem} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  const corrupt = file('corrupt.pem', '-----BEGIN CERTIFICATE-----\nAAAAnotacertificate\n-----END CERTIFICATE-----\n');
  assert.match(inputErrorOf(() => loadStageConfig({ env: { CUILINK_KAFKA_TLS_CA_FILE: corrupt } })), new RegExp(`^environment variable CUILINK_KAFKA_TLS_CA_FILE: 'ssl.caFile': ${corrupt}: certificate 1 of 1 does not parse \\(`));
  const tlsEnv = { CUILINK_KAFKA_TLS_CERT_FILE: pki.clientCertFile, CUILINK_KAFKA_TLS_KEY_FILE: pki.strayKeyFile };
  assert.equal(
    inputErrorOf(() => loadStageConfig({ env: tlsEnv })),
    `environment variable CUILINK_KAFKA_TLS_CERT_FILE: 'ssl.certFile': ${pki.clientCertFile} is not the certificate of ssl.keyFile ${pki.strayKeyFile} (their public keys differ)`,
  );
  assert.match(inputErrorOf(() => loadStageConfig({ env: { ...tlsEnv, CUILINK_KAFKA_TLS_KEY_FILE: pki.clientKeyFile } })), /^environment variable CUILINK_KAFKA_TLS_KEY_FILE: 'ssl.keyFile': .*client\.key is an encrypted key: give its passphrase/);
  const wrongPassphrase = file('wrong-passphrase', 'not-it\n');
  assert.match(
    inputErrorOf(() => loadStageConfig({ env: { ...tlsEnv, CUILINK_KAFKA_TLS_KEY_FILE: pki.clientKeyFile, CUILINK_KAFKA_TLS_KEY_PASSPHRASE_FILE: wrongPassphrase } })),
    /'ssl.keyFile': .*client\.key does not decrypt with the given passphrase$/,
  );
  assert.match(inputErrorOf(() => loadStageConfig({ env: { CUILINK_KAFKA_TLS_KEY_FILE: pki.strayKeyFile } })), /'ssl.keyFile': a client key needs its certificate \(certFile\)/);
  assert.match(inputErrorOf(() => loadStageConfig({ env: { CUILINK_KAFKA_TLS_CERT_FILE: pki.clientCertFile } })), /^environment variable CUILINK_KAFKA_TLS_CERT_FILE: 'ssl.certFile': a client certificate needs its key/);
  assert.match(inputErrorOf(() => loadStageConfig({ file: file('typo.json', JSON.stringify({ ssl: { cafile: pki.caFile } })), env: {} })), /'ssl': Unrecognized key\(s\) in object: 'cafile'/);
  // The client factory and the Kafka tools check the same way, naming the field or the variable.
  assert.equal(inputErrorOf(() => createKafkaClient({ brokers: ['h:1'], ssl: { caFile: missing } })), `invalid Kafka connection config: ssl.caFile: cannot read ${missing} (no such file)`);
  assert.equal(inputErrorOf(() => kafkaRequest({ brokers: 'h:1' }, 'tool', { CUILINK_KAFKA_TLS_CA_FILE: missing })), `environment variable CUILINK_KAFKA_TLS_CA_FILE ('ssl.caFile'): cannot read ${missing} (no such file)`);
  assert.equal(inputErrorOf(() => resolveTls({ caFile: missing })), `Kafka connection 'ssl.caFile': cannot read ${missing} (no such file)`);
});

test('SASL: password or passwordFile (exactly one), username required, secret files must hold something', () => {
  const empty = file('empty-password', '\n');
  assert.equal(inputErrorOf(() => loadStageConfig({ env: { CUILINK_SASL_MECHANISM: 'scram-sha-256', CUILINK_SASL_USERNAME: 'u', CUILINK_SASL_PASSWORD_FILE: empty } })), `environment variable CUILINK_SASL_PASSWORD_FILE: 'sasl.passwordFile': ${empty} is empty`);
  assert.match(inputErrorOf(() => loadStageConfig({ env: { CUILINK_SASL_MECHANISM: 'plain', CUILINK_SASL_USERNAME: 'u' } })), /^environment variables CUILINK_SASL_MECHANISM, CUILINK_SASL_USERNAME: 'sasl\.password' \(CUILINK_SASL_PASSWORD\): password or passwordFile is required/);
  assert.match(inputErrorOf(() => loadStageConfig({ env: { CUILINK_SASL_MECHANISM: 'plain', CUILINK_SASL_USERNAME: 'u', CUILINK_SASL_PASSWORD: 'p', CUILINK_SASL_PASSWORD_FILE: empty } })), /give password or passwordFile, not both/);
  assert.match(inputErrorOf(() => loadStageConfig({ env: { CUILINK_SASL_MECHANISM: 'gssapi', CUILINK_SASL_USERNAME: 'u', CUILINK_SASL_PASSWORD: 'p' } })), /^environment variable CUILINK_SASL_MECHANISM: 'sasl.mechanism': Invalid discriminator value/);
  assert.equal(inputErrorOf(() => kafkaRequest({ brokers: 'h:1' }, 'tool', { CUILINK_SASL_MECHANISM: 'scram-sha-512', CUILINK_SASL_PASSWORD: 'p' })), "environment variable CUILINK_SASL_USERNAME ('sasl.username'): Required");
  // OAUTHBEARER: endpoint, client id and a secret; a secret file is read at start.
  const secretFile = file('client-secret', 's3cret\n');
  const oauthEnv = { CUILINK_SASL_MECHANISM: 'oauthbearer', CUILINK_SASL_OAUTH_TOKEN_ENDPOINT: 'https://idp.example/oauth2/token', CUILINK_SASL_OAUTH_CLIENT_ID: 'stage', CUILINK_SASL_OAUTH_CLIENT_SECRET_FILE: secretFile, CUILINK_SASL_OAUTH_SCOPE: 'kafka' };
  assert.deepEqual(loadStageConfig({ env: oauthEnv }).sasl, { mechanism: 'oauthbearer', tokenEndpoint: 'https://idp.example/oauth2/token', clientId: 'stage', clientSecretFile: secretFile, scope: 'kafka' });
  const missingSecret = join(dir, 'no-secret');
  assert.equal(inputErrorOf(() => loadStageConfig({ env: { ...oauthEnv, CUILINK_SASL_OAUTH_CLIENT_SECRET_FILE: missingSecret } })), `environment variable CUILINK_SASL_OAUTH_CLIENT_SECRET_FILE: 'sasl.clientSecretFile': cannot read ${missingSecret} (no such file)`);
  assert.match(inputErrorOf(() => loadStageConfig({ env: { ...oauthEnv, CUILINK_SASL_OAUTH_TOKEN_ENDPOINT: 'ftp://idp' } })), /^environment variable CUILINK_SASL_OAUTH_TOKEN_ENDPOINT: 'sasl.tokenEndpoint': an http\(s\) URL/);
  assert.match(inputErrorOf(() => loadStageConfig({ env: { ...oauthEnv, CUILINK_SASL_USERNAME: 'u' } })), /'sasl': Unrecognized key\(s\) in object: 'username'/);
  const sasl = resolveKafkaSecurity(validateKafkaConnection({ brokers: ['h:1'], sasl: loadStageConfig({ env: oauthEnv }).sasl })).sasl!;
  assert.equal(sasl.mechanism, 'OAUTHBEARER');
  assert.equal(typeof sasl.token, 'function', 'a token provider, called when a connection authenticates');
});

test('CUILINK_SSL=false beside a TLS file variable is refused naming both, by the stage and the tools; true beside one is TLS with the file', () => {
  // The file variable made `ssl` an object: TLS was on against the explicit false.
  const env = { CUILINK_SSL: 'false', CUILINK_KAFKA_TLS_CA_FILE: join(dir, 'ca.pem'), CUILINK_KAFKA_TLS_SERVERNAME: 'kafka.internal' };
  const expected = `environment variable CUILINK_SSL=false turns TLS off, and CUILINK_KAFKA_TLS_CA_FILE, CUILINK_KAFKA_TLS_SERVERNAME turn it on: unset one`;
  assert.equal(inputErrorOf(() => loadStageConfig({ env })), expected);
  assert.equal(inputErrorOf(() => kafkaRequest({ brokers: 'h:1' }, 'tool', env)), expected);
  assert.deepEqual(loadStageConfig({ env: { CUILINK_SSL: 'true', CUILINK_KAFKA_TLS_SERVERNAME: 'kafka.internal' } }).ssl, { servername: 'kafka.internal' });
  assert.equal(loadStageConfig({ env: { CUILINK_SSL: 'off' } }).ssl, false);
});

test('the Kafka tools name --brokers or CUILINK_BROKERS for a bad broker, not a connection field', () => {
  assert.equal(inputErrorOf(() => kafkaRequest({}, 'tool', { CUILINK_BROKERS: 'kafka-1:9092,kafka-2' })), "environment variable CUILINK_BROKERS ('brokers.1'): a broker is host:port");
  assert.equal(inputErrorOf(() => kafkaRequest({ brokers: 'kafka-2' }, 'tool', { CUILINK_BROKERS: 'kafka-1:9092' })), "--brokers ('brokers.0'): a broker is host:port");
});

test('the stage table and the tools read the same security variables', () => {
  for (const [name, path] of KAFKA_SECURITY_ENV_VARS) {
    const row = ENV_VARS.find(([n]) => n === name);
    assert.ok(row, `${name} is in ENV_VARS`);
    assert.deepEqual(row[1], path, name);
  }
  const ssl = ENV_VARS.findIndex(([n]) => n === 'CUILINK_SSL');
  for (const [name, path] of ENV_VARS) if (path[0] === 'ssl' && path.length > 1) assert.ok(ENV_VARS.findIndex(([n]) => n === name) > ssl, `${name} after CUILINK_SSL (a file variable makes ssl an object)`);
});

test('OIDC client credentials: a form POST with HTTP Basic, the token cached until shortly before it expires, one request for concurrent callers', async () => {
  const endpoint: TokenEndpoint = await startTokenEndpoint({ clientId: 'stage id', clientSecret: 's3cret:+/', expiresInS: 300 });
  try {
    let now = Date.now();
    const provider = new OidcTokenProvider({ tokenEndpoint: endpoint.url, clientId: 'stage id', clientSecret: 's3cret:+/', scope: 'kafka read', now: () => now });
    const [a, b] = await Promise.all([provider.token(), provider.token()]);
    assert.equal(a, b);
    assert.equal(provider.fetches, 1, 'concurrent callers share one request');
    assert.deepEqual(endpoint.requests[0]!.form, { grant_type: 'client_credentials', scope: 'kafka read' });
    assert.equal(endpoint.requests[0]!.contentType, 'application/x-www-form-urlencoded');
    const claims = JSON.parse(Buffer.from(a.split('.')[1]!, 'base64url').toString('utf8')) as { sub: string };
    assert.equal(claims.sub, 'cuilink-stage');
    now += 200_000;
    assert.equal(await provider.token(), a, 'still cached 200 s into 300');
    now += 45_000;
    await provider.token();
    assert.equal(provider.fetches, 2, 'fetched again within a minute of expiry');
  } finally {
    await endpoint.close();
  }
});

test('a token endpoint that refuses, fails or answers without a token: one line naming the endpoint', async () => {
  const endpoint = await startTokenEndpoint({ clientId: 'stage', clientSecret: 'right' });
  try {
    const refused = new OidcTokenProvider({ tokenEndpoint: endpoint.url, clientId: 'stage', clientSecret: 'wrong' });
    await assert.rejects(refused.token(), (e: unknown) => {
      assert.ok(e instanceof CuilinkError);
      assert.equal(e.code, 'OAUTH_TOKEN_REFUSED');
      assert.equal(e.retriable, false);
      assert.equal(e.message, `OAuth token endpoint ${endpoint.url} answered 401 Unauthorized: invalid_client: client authentication failed`);
      return true;
    });
    assert.equal(refused.fetches, 1);
    await assert.rejects(refused.token(), /answered 401/, 'a refusal is not cached: the next connection asks again');
    assert.equal(refused.fetches, 2);
  } finally {
    await endpoint.close();
  }
  const closed = await closedPort();
  const down = new OidcTokenProvider({ tokenEndpoint: `http://127.0.0.1:${closed}/token`, clientId: 'stage', clientSecret: 'right' });
  await assert.rejects(down.token(), (e: unknown) => e instanceof CuilinkError && e.code === 'OAUTH_TOKEN_UNAVAILABLE' && e.retriable && e.message === `OAuth token endpoint http://127.0.0.1:${closed}/token: request failed (ECONNREFUSED)`);
  const noToken = await startTokenEndpoint({ clientId: 'stage', clientSecret: 'right', accessToken: '' });
  try {
    const provider = new OidcTokenProvider({ tokenEndpoint: noToken.url, clientId: 'stage', clientSecret: 'right' });
    await assert.rejects(provider.token(), (e: unknown) => e instanceof CuilinkError && e.code === 'OAUTH_TOKEN_REFUSED' && e.message === `OAuth token endpoint ${noToken.url} answered 200 without an access_token`);
  } finally {
    await noToken.close();
  }
});
