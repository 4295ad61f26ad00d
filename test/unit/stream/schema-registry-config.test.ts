import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../../src/kb/errors.ts';
import { subjectName } from '../../../src/stream/avro/confluent-avro-codec.ts';
import { schemaRegistryFromEnv } from '../../../src/stream/avro/schema-registry-config.ts';
import { KAFKA_FLAGS_HELP, kafkaRequest } from '../../../src/cli/kafka-flags.ts';
import { loadStageConfig, schemaRegistryOf } from '../../../src/stream/stage-config.ts';

const dir = mkdtempSync(join(tmpdir(), 'cuilink-registry-config-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

function selfSigned(name: string): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${name}`], { stdio: 'ignore' });
  return { cert, key };
}

/** The InputError's message: one line, matching every pattern. */
function oneLineError(fn: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof InputError, String(error));
    assert.doesNotMatch(error.message, /\n/);
    for (const pattern of patterns) assert.match(error.message, pattern);
    return true;
  });
}

test('subject names: topic (default) <topic>-value, record <namespace.Name>, topic-record <topic>-<namespace.Name>', () => {
  assert.equal(subjectName('topic', 'org.cuilink.LinkedNote', 'cuilink.linked'), 'cuilink.linked-value');
  assert.equal(subjectName('record', 'org.cuilink.LinkedNote', 'cuilink.linked'), 'org.cuilink.LinkedNote');
  assert.equal(subjectName('record', 'org.cuilink.LinkedNote', undefined), 'org.cuilink.LinkedNote');
  assert.equal(subjectName('topic-record', 'org.cuilink.LinkedNote', 'cuilink.linked'), 'cuilink.linked-org.cuilink.LinkedNote');
  assert.throws(() => subjectName('topic', 'org.cuilink.LinkedNote', undefined), /strategy 'topic' needs the topic/);
});

test('stage config: the schemaRegistry section, its defaults, files read at start, env variables', () => {
  const defaults = loadStageConfig({ env: {} });
  assert.deepEqual(defaults.schemaRegistry, { subjectNameStrategy: 'topic' });
  assert.equal(schemaRegistryOf(defaults), undefined, 'plain format: no registry');

  const password = file('password', 's3cret\n');
  const config = loadStageConfig({ env: {}, overrides: { 'avro.wireFormat': 'confluent', schemaRegistry: { url: 'http://registry:8081', auth: { basic: { username: 'cuilink', passwordFile: password } }, subjectNameStrategy: 'topic-record' } } });
  assert.deepEqual(schemaRegistryOf(config), { url: 'http://registry:8081', subjectNameStrategy: 'topic-record', auth: { basic: { username: 'cuilink', password: 's3cret' } } });

  const token = file('token', 'eyJ.token\n');
  const fromEnv = loadStageConfig({ env: { CUILINK_WIRE_FORMAT: 'confluent', CUILINK_SCHEMA_REGISTRY_URL: 'http://r:1', CUILINK_SCHEMA_REGISTRY_BEARER_TOKEN_FILE: token, CUILINK_SCHEMA_REGISTRY_SUBJECT_STRATEGY: 'record' } });
  assert.deepEqual(schemaRegistryOf(fromEnv), { url: 'http://r:1', subjectNameStrategy: 'record', auth: { bearer: { token: 'eyJ.token' } } });

  // The deprecated avro.registryUrl still works.
  const old = loadStageConfig({ env: {}, overrides: { avro: { wireFormat: 'confluent', registryUrl: 'http://old:8081' } } });
  assert.equal(schemaRegistryOf(old)?.url, 'http://old:8081');
  assert.equal(schemaRegistryOf(old)?.subjectNameStrategy, 'topic');

  const { cert, key } = selfSigned('registry');
  const tls = loadStageConfig({ env: { CUILINK_WIRE_FORMAT: 'confluent', CUILINK_SCHEMA_REGISTRY_URL: 'https://r:1', CUILINK_SCHEMA_REGISTRY_CA_FILE: cert, CUILINK_SCHEMA_REGISTRY_CERT_FILE: cert, CUILINK_SCHEMA_REGISTRY_KEY_FILE: key } });
  const resolved = schemaRegistryOf(tls)!;
  assert.equal(resolved.tls?.ca, readFileSync(cert, 'utf8'));
  assert.equal(resolved.tls?.rejectUnauthorized, true);
});

test('stage config: each bad registry option is a one-line error naming the field (or variable) and the file', () => {
  const confluent = (schemaRegistry: unknown, env: NodeJS.ProcessEnv = {}): unknown => loadStageConfig({ env, overrides: { 'avro.wireFormat': 'confluent', schemaRegistry } });
  oneLineError(() => loadStageConfig({ env: { CUILINK_WIRE_FORMAT: 'confluent' } }), /'schemaRegistry\.url' \(CUILINK_SCHEMA_REGISTRY_URL\): required when avro\.wireFormat is confluent/);
  oneLineError(() => confluent({ url: 'ftp://x' }), /'schemaRegistry\.url'/);
  oneLineError(() => confluent({ url: 'http://r:1', subjectNameStrategy: 'subject' }), /'schemaRegistry\.subjectNameStrategy'/);
  oneLineError(() => loadStageConfig({ env: { CUILINK_SCHEMA_REGISTRY_SUBJECT_STRATEGY: 'nope' } }), /environment variable CUILINK_SCHEMA_REGISTRY_SUBJECT_STRATEGY/);
  oneLineError(() => confluent({ url: 'http://r:1', auth: { basic: { username: 'u' } } }), /'schemaRegistry\.auth\.basic': set one of password and passwordFile/);
  oneLineError(() => confluent({ url: 'http://r:1', auth: { basic: { username: 'u', password: 'p' }, bearer: { token: 't' } } }), /'schemaRegistry\.auth': set basic or bearer, not both/);
  oneLineError(() => confluent({ url: 'http://r:1', auth: { bearer: { token: 't', tokenFile: '/x' } } }), /'schemaRegistry\.auth\.bearer': set one of token and tokenFile/);
  oneLineError(() => confluent({ url: 'http://r:1', tls: { caFile: '/x' } }), /'schemaRegistry\.tls': set, but url http:\/\/r:1 is not https/);
  oneLineError(() => confluent({ url: 'https://r:1', tls: { certFile: '/x' } }), /'schemaRegistry\.tls\.keyFile' \(CUILINK_SCHEMA_REGISTRY_KEY_FILE\): certFile and keyFile go together/);

  const missing = join(dir, 'no-such-file');
  oneLineError(() => confluent({ url: 'http://r:1', auth: { basic: { username: 'u', passwordFile: missing } } }), /schemaRegistry\.auth\.basic\.passwordFile: cannot read .*no-such-file \(ENOENT\)/);
  oneLineError(() => confluent({ url: 'http://r:1', auth: { bearer: { tokenFile: file('empty', '\n') } } }), /schemaRegistry\.auth\.bearer\.tokenFile: .*empty is empty/);
  oneLineError(() => loadStageConfig({ env: { CUILINK_WIRE_FORMAT: 'confluent', CUILINK_SCHEMA_REGISTRY_URL: 'http://r:1', CUILINK_SCHEMA_REGISTRY_USERNAME: 'u', CUILINK_SCHEMA_REGISTRY_PASSWORD_FILE: missing } }), /environment variable CUILINK_SCHEMA_REGISTRY_PASSWORD_FILE: cannot read .*no-such-file/);
  oneLineError(() => confluent({ url: 'https://r:1', tls: { caFile: file('not-pem', 'hello') } }), /schemaRegistry\.tls\.caFile: .*not-pem holds no PEM certificate/);
  const { cert, key } = selfSigned('one');
  const other = selfSigned('two');
  oneLineError(() => confluent({ url: 'https://r:1', tls: { certFile: cert, keyFile: cert } }), /schemaRegistry\.tls\.keyFile: .*one\.crt holds no readable unencrypted PEM private key/);
  oneLineError(() => confluent({ url: 'https://r:1', tls: { certFile: cert, keyFile: other.key } }), /schemaRegistry\.tls\.keyFile: .*two\.key is not the key of schemaRegistry\.tls\.certFile .*one\.crt/);
  withConfigFile({ avro: { wireFormat: 'confluent' }, schemaRegistry: { url: 'https://r:1', tls: { caFile: missing } } }, (path) => oneLineError(() => loadStageConfig({ file: path, env: {} }), new RegExp(`config ${path}: schemaRegistry\\.tls\\.caFile: cannot read`)));
  assert.ok(confluent({ url: 'https://r:1', tls: { certFile: cert, keyFile: key } }));
});

function withConfigFile(content: unknown, fn: (path: string) => void): void {
  fn(file(`stage-${Math.random().toString(36).slice(2)}.json`, JSON.stringify(content)));
}

test('Kafka tools: --schema-registry or the URL variable, the rest from CUILINK_SCHEMA_REGISTRY_*; errors name the variable', () => {
  const env = { CUILINK_BROKERS: 'b:9092' };
  assert.equal(kafkaRequest({}, 'tool', env).schemaRegistry, undefined);
  // An empty variable (`CUILINK_SCHEMA_REGISTRY_URL=`) is unset, as for the stage and the other variables: it was refused as no URL.
  assert.equal(kafkaRequest({}, 'tool', { ...env, CUILINK_SCHEMA_REGISTRY_URL: '' }).schemaRegistry, undefined);
  assert.deepEqual(kafkaRequest({ 'schema-registry': 'http://r:1' }, 'tool', env).schemaRegistry, { url: 'http://r:1', subjectNameStrategy: 'topic' });
  const password = file('tool-password', 'pw\n');
  assert.deepEqual(kafkaRequest({}, 'tool', { ...env, CUILINK_SCHEMA_REGISTRY_URL: 'http://r:1', CUILINK_SCHEMA_REGISTRY_USERNAME: 'u', CUILINK_SCHEMA_REGISTRY_PASSWORD_FILE: password, CUILINK_SCHEMA_REGISTRY_SUBJECT_STRATEGY: 'record' }).schemaRegistry, {
    url: 'http://r:1',
    subjectNameStrategy: 'record',
    auth: { basic: { username: 'u', password: 'pw' } },
  });
  oneLineError(() => schemaRegistryFromEnv({ CUILINK_SCHEMA_REGISTRY_USERNAME: 'u' }), /CUILINK_SCHEMA_REGISTRY_USERNAME set without a registry URL/);
  oneLineError(() => schemaRegistryFromEnv({ CUILINK_SCHEMA_REGISTRY_SUBJECT_STRATEGY: 'x' }, 'http://r:1'), /^CUILINK_SCHEMA_REGISTRY_SUBJECT_STRATEGY: /);
  oneLineError(() => schemaRegistryFromEnv({ CUILINK_SCHEMA_REGISTRY_USERNAME: 'u' }, 'http://r:1'), /schemaRegistry\.auth\.basic \(from CUILINK_SCHEMA_REGISTRY_USERNAME\): set one of password and passwordFile/);
  oneLineError(() => schemaRegistryFromEnv({ CUILINK_SCHEMA_REGISTRY_CA_FILE: join(dir, 'gone.pem') }, 'https://r:1'), /^CUILINK_SCHEMA_REGISTRY_CA_FILE: cannot read .*gone\.pem \(ENOENT\)/);
  oneLineError(() => schemaRegistryFromEnv({ CUILINK_SCHEMA_REGISTRY_CA_FILE: join(dir, 'gone.pem') }, 'http://r:1'), /schemaRegistry\.tls \(from CUILINK_SCHEMA_REGISTRY_CA_FILE\): set, but url http:\/\/r:1 is not https/);
});

test('Kafka tools\' --help says what they write without a registry: single-object encoding (the deprecated fingerprint header is no longer written: avro-codec.test.ts)', () => {
  const option = KAFKA_FLAGS_HELP.slice(KAFKA_FLAGS_HELP.indexOf('--schema-registry'), KAFKA_FLAGS_HELP.indexOf('Registry auth'));
  assert.doesNotMatch(option, /fingerprint header/);
  assert.match(option, /default: the plain format, Avro single-object encoding/);
});

test('cuilink dlq reads the registry as the stage does: schemaRegistry.url with its auth, the deprecated avro.registryUrl too; --schema-registry replaces the URL only', async () => {
  const { dlqSchemaRegistry } = await import('../../../src/cli/commands/dlq.ts');
  const password = file('password', 's3cret\n');
  const config = loadStageConfig({ env: {}, overrides: { 'avro.wireFormat': 'confluent', schemaRegistry: { url: 'http://registry:8081', auth: { basic: { username: 'cuilink', passwordFile: password } } } } });
  assert.deepEqual(dlqSchemaRegistry(config, undefined), schemaRegistryOf(config));
  assert.deepEqual(dlqSchemaRegistry(config, 'http://other:8081'), { ...schemaRegistryOf(config), url: 'http://other:8081' });
  const old = loadStageConfig({ env: {}, overrides: { avro: { wireFormat: 'confluent', registryUrl: 'http://old:8081' } } });
  assert.equal(dlqSchemaRegistry(old, undefined)?.url, 'http://old:8081');
  assert.equal(dlqSchemaRegistry(loadStageConfig({ env: {} }), undefined), undefined, 'plain format: no registry');
  assert.deepEqual(dlqSchemaRegistry(loadStageConfig({ env: {} }), 'http://r:1'), { url: 'http://r:1' });
  assert.throws(() => dlqSchemaRegistry(config, 'registry:8081'), /--schema-registry must be an http\(s\) URL/);
});
