import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getPath } from '../../../src/stream/env-vars.ts';
import { loadStageConfig, stageConfigSchema } from '../../../src/stream/stage-config.ts';
import { TOPIC_BOUND_SETTINGS } from '../../../src/stream/topic-bound-settings.ts';

function withFile(content: string, fn: (file: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-config-'));
  try {
    const file = join(dir, 'stage.json');
    writeFileSync(file, content);
    fn(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('defaults, then the file, then environment variables', () => {
  const defaults = loadStageConfig({ env: {} });
  assert.deepEqual(defaults.brokers, []);
  assert.equal(defaults.delivery, 'at-least-once');
  assert.equal(defaults.batching.maxMentions, 128);
  assert.equal(defaults.telemetry.logPhi, false);
  withFile(JSON.stringify({ brokers: ['a:9092'], topics: { input: 'in.x' }, batching: { maxWaitMs: 3 } }), (file) => {
    const config = loadStageConfig({ file, env: { CUILINK_BROKERS: 'b:1, c:2', CUILINK_DELIVERY: 'exactly-once', CUILINK_LOG_PHI: 'false', CUILINK_MAX_BATCH_MENTIONS: '64' } });
    assert.deepEqual(config.brokers, ['b:1', 'c:2'], 'env wins over the file');
    assert.equal(config.topics.input, 'in.x');
    assert.equal(config.topics.output, 'cuilink.linked');
    assert.equal(config.batching.maxWaitMs, 3);
    assert.equal(config.batching.maxMentions, 64);
    assert.equal(config.delivery, 'exactly-once');
  });
  assert.equal(loadStageConfig({ env: { CUILINK_RERANKER: 'none' } }).linker.rerankerDir, false);
  assert.equal(loadStageConfig({ env: { CUILINK_RERANKER: 'models/other' } }).linker.rerankerDir, 'models/other');
  const cached = loadStageConfig({ env: { CUILINK_LINK_CACHE_ENTRIES: '5000', CUILINK_LINK_CACHE_BYTES: '1048576', CUILINK_THREADS: '1' } });
  assert.deepEqual(cached.link, { cache: { maxEntries: 5000, maxBytes: 1048576 } });
  assert.equal(cached.linker.threads, 1);
  assert.equal(defaults.linker.rerankerDir, undefined);
});

test('label selection: off by default; topics, policy, budget, window and the measure split from the environment', () => {
  const plain = loadStageConfig({ env: {} });
  assert.deepEqual([plain.topics.labelRequests, plain.topics.measureRequests, plain.labels.policy, plain.labels.budget, plain.labels.windowMs, plain.labels.measureFraction, plain.labels.splitSeed], [undefined, undefined, 'confidence', 100, 3_600_000, 0.02, 20261124]);
  const set = loadStageConfig({ env: { CUILINK_LABEL_TOPIC: 'asks', CUILINK_MEASURE_TOPIC: 'measure', CUILINK_LABEL_POLICY: 'confidence', CUILINK_LABEL_BUDGET: '25', CUILINK_LABEL_WINDOW_MS: '86400000', CUILINK_MEASURE_FRACTION: '0.05', CUILINK_MEASURE_BUDGET: '40', CUILINK_LABEL_SPLIT_SEED: '7' } });
  assert.deepEqual([set.topics.labelRequests, set.topics.measureRequests, set.labels.policy, set.labels.budget, set.labels.windowMs, set.labels.measureFraction, set.labels.measureBudget, set.labels.splitSeed], ['asks', 'measure', 'confidence', 25, 86_400_000, 0.05, 40, 7]);
});

test('bad values are InputErrors naming the field and where it came from', () => {
  assert.throws(() => loadStageConfig({ env: { CUILINK_DELIVERY: 'twice' } }), (e: Error & { code?: string }) => e.code === 'BAD_CONFIG' && /CUILINK_DELIVERY/.test(e.message) && /delivery/.test(e.message));
  assert.throws(() => loadStageConfig({ env: { CUILINK_MAX_BATCH_MENTIONS: 'lots' } }), /batching\.maxMentions/);
  withFile('{"batching": {"maxMentions": 0}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), new RegExp(`config ${file}.*batching\\.maxMentions`)));
  withFile('{"typo": 1}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), /Unrecognized key/));
  withFile('not json', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), /not valid JSON/));
  withFile('{"topics": {"input": "same", "output": "same"}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), /must be different topics/));
  withFile('{"topics": {"review": "cuilink.linked"}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), /input, output, deadLetter, review, labelRequests and measureRequests must be different topics/));
  withFile('{"topics": {"labelRequests": "asks", "measureRequests": "asks"}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), /must be different topics/));
  withFile('{"labels": {"polcy": "confidence"}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), /polcy/));
  assert.throws(() => loadStageConfig({ env: { CUILINK_LABEL_POLICY: 'psychic' } }), /CUILINK_LABEL_POLICY.*labels\.policy|labels\.policy.*CUILINK_LABEL_POLICY/);
  assert.throws(() => loadStageConfig({ env: { CUILINK_MEASURE_FRACTION: '1.5' } }), /labels\.measureFraction/);
  withFile('{"avro": {"wireFormat": "confluent"}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), /registryUrl/));
  withFile('{"link": {"topK": 0}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), /topK/));
  assert.throws(() => loadStageConfig({ env: { CUILINK_BROKERS: 'no-port' } }), /host:port/);
  withFile('{"consumer": {"sessionTimeoutMs": 6000, "heartbeatIntervalMs": 10000}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), /consumer\.heartbeatIntervalMs.*must be under consumer\.sessionTimeoutMs \(6000\)/));
  assert.equal(loadStageConfig({ env: {}, overrides: { 'consumer.sessionTimeoutMs': 120_000 } }).consumer.sessionTimeoutMs, 120_000, 'a session longer than the client\'s default rebalance timeout is allowed (the stage raises the rebalance timeout)');
});

test('a review or labels setting without the topic it acts through is refused, naming the setting, where it was set and the topic it needs', () => {
  const refused = (pattern: RegExp) => (e: Error & { code?: string }) => e.code === 'BAD_CONFIG' && pattern.test(e.message);
  assert.throws(() => loadStageConfig({ env: { CUILINK_REVIEW_BELOW: '0.7' } }), refused(/^environment variable CUILINK_REVIEW_BELOW: 'review\.belowConfidence' has no effect without topics\.review \(CUILINK_REVIEW_TOPIC\)/));
  withFile('{"review": {"belowConfidence": 0.3}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), refused(new RegExp(`^config ${file}: 'review\\.belowConfidence' has no effect without topics\\.review`))));
  assert.throws(() => loadStageConfig({ env: {}, overrides: { 'review.belowConfidence': 0.2 } }), refused(/^config: 'review\.belowConfidence'/));
  assert.throws(() => loadStageConfig({ env: { CUILINK_LABEL_BUDGET: '5' } }), refused(/CUILINK_LABEL_BUDGET: 'labels\.budget' has no effect without topics\.labelRequests \(CUILINK_LABEL_TOPIC\)/));
  // With only the measure topic the learn stream's budget is 0 whatever is set; the measure budget bounds only measure requests.
  assert.throws(() => loadStageConfig({ env: { CUILINK_MEASURE_TOPIC: 'measure', CUILINK_LABEL_BUDGET: '5' } }), refused(/'labels\.budget' has no effect without topics\.labelRequests/));
  assert.throws(() => loadStageConfig({ env: { CUILINK_LABEL_TOPIC: 'asks', CUILINK_MEASURE_BUDGET: '5' } }), refused(/'labels\.measureBudget' has no effect without topics\.measureRequests \(CUILINK_MEASURE_TOPIC\)/));
  assert.throws(() => loadStageConfig({ env: { CUILINK_LABEL_WINDOW_MS: '60000' } }), refused(/'labels\.windowMs' has no effect without topics\.labelRequests \(CUILINK_LABEL_TOPIC\) or topics\.measureRequests \(CUILINK_MEASURE_TOPIC\)/));
  assert.equal(loadStageConfig({ env: { CUILINK_MEASURE_TOPIC: 'measure', CUILINK_MEASURE_FRACTION: '0.1', CUILINK_LABEL_WINDOW_MS: '60000' } }).labels.measureFraction, 0.1);
  assert.equal(loadStageConfig({ env: { CUILINK_REVIEW_TOPIC: 'review', CUILINK_REVIEW_BELOW: '0.7' } }).review.belowConfidence, 0.7);
  // Every setting of the two sections, given at its own default value: refused without any topic, loaded with all of them.
  const defaults = loadStageConfig({ env: {} });
  const sections = stageConfigSchema.innerType().shape;
  const settings = (['review', 'labels'] as const).flatMap((section) => Object.keys(sections[section].removeDefault().shape).map((key) => `${section}.${key}`));
  assert.deepEqual(settings.sort(), TOPIC_BOUND_SETTINGS.map((s) => s.setting).sort(), 'every review.* and labels.* setting says which topic it needs');
  for (const setting of settings) {
    const [section, key] = setting.split('.') as ['review' | 'labels', string];
    const given = { [section]: { [key]: (defaults[section] as Record<string, unknown>)[key] } };
    withFile(JSON.stringify(given), (file) => assert.throws(() => loadStageConfig({ file, env: {} }), refused(new RegExp(`'${setting.replace('.', '\\.')}' has no effect without`)), setting));
    withFile(JSON.stringify({ ...given, topics: { review: 'r', labelRequests: 'l', measureRequests: 'm' } }), (file) => assert.doesNotThrow(() => loadStageConfig({ file, env: {} }), setting));
  }
});

test("a command's own default topic (the demo's review topic) counts as given; a configured one wins over it", () => {
  const config = loadStageConfig({ env: { CUILINK_REVIEW_BELOW: '0.7' }, defaults: { 'topics.review': 'cuilink.review' } });
  assert.deepEqual([config.topics.review, config.review.belowConfidence], ['cuilink.review', 0.7]);
  assert.equal(loadStageConfig({ env: { CUILINK_REVIEW_TOPIC: 'mine' }, defaults: { 'topics.review': 'cuilink.review' } }).topics.review, 'mine');
});

test("a bad 'link' setting is refused naming the config file or the variable that set it, and the key under link", () => {
  const refused = (pattern: RegExp) => (e: Error & { code?: string }) => e.code === 'BAD_CONFIG' && pattern.test(e.message);
  withFile('{"link": {"rerank": {"weight": 2}}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), refused(new RegExp(`^config ${file}: 'link\\.rerank\\.weight'`))));
  withFile('{"link": {"topK": 5}}', (file) => assert.throws(() => loadStageConfig({ file, env: { CUILINK_LINK_CACHE_ENTRIES: '-3' } }), refused(/^environment variable CUILINK_LINK_CACHE_ENTRIES: 'link\.cache\.maxEntries'/)));
  withFile('{"link": {"memory": {"kbVotes": 1e400}}}', (file) => assert.throws(() => loadStageConfig({ file, env: {} }), refused(new RegExp(`^config ${file}: 'link\\.memory\\.kbVotes'.*finite`))));
});

test('a duration past what a Node timer holds, or a size past what Kafka carries, is refused naming the key and where it came from', () => {
  // 2^31 ms and more: Node fires such a timer at once (TimeoutOverflowWarning), so a drain
  // timeout or probe interval meant to be long acted as 1 ms; the session and transaction timeouts
  // and the fetch size are int32 fields of Kafka requests, which the client cannot write.
  const refused = (pattern: RegExp) => (e: Error & { code?: string }) => e.code === 'BAD_CONFIG' && pattern.test(e.message);
  for (const [variable, key] of [['CUILINK_DRAIN_TIMEOUT_MS', 'drainTimeoutMs'], ['CUILINK_HEALTH_PROBE_INTERVAL_MS', 'health.probeIntervalMs'], ['CUILINK_MEMORY_POLL_MS', 'linker.memoryPollMs']] as const) {
    assert.equal(getPath(loadStageConfig({ env: { [variable]: '2147483647' } }) as unknown as Record<string, unknown>, key.split('.')), 2_147_483_647, `${key} at the most a timer holds`);
    assert.throws(() => loadStageConfig({ env: { [variable]: '2147483648' } }), refused(new RegExp(`^environment variable ${variable}: '${key.replace('.', '\\.')}': .*2147483647`)), key);
  }
  for (const key of ['transactionTimeoutMs', 'consumer.sessionTimeoutMs', 'consumer.maxBytesPerPartition', 'retry.initialBackoffMs', 'retry.maxBackoffMs', 'telemetry.metricExportIntervalMs']) {
    const [section, field] = key.includes('.') ? key.split('.') : [undefined, key];
    const content = section === undefined ? { [field!]: 1e12 } : { [section]: { [field!]: 1e12 } };
    withFile(JSON.stringify(content), (file) => assert.throws(() => loadStageConfig({ file, env: {} }), refused(new RegExp(`^config ${file}: '${key.replace('.', '\\.')}': .*2147483647`)), key));
  }
});

test('a refusal names the variable that set the key or an object above it, and a key no source set the variable that would set it', () => {
  const refused = (pattern: RegExp) => (e: Error & { code?: string }) => e.code === 'BAD_CONFIG' && pattern.test(e.message);
  // The second broker of CUILINK_BROKERS was blamed on the config file, which held good ones.
  withFile('{"brokers": ["kafka-1:9092"]}', (file) => assert.throws(() => loadStageConfig({ file, env: { CUILINK_BROKERS: 'kafka-1:9092,kafka-2' } }), refused(/^environment variable CUILINK_BROKERS: 'brokers\.1': a broker is host:port/)));
  // SASL set by variables alone, one missing: the refusal named neither what was set nor what to set.
  assert.throws(() => loadStageConfig({ env: { CUILINK_SASL_MECHANISM: 'plain', CUILINK_SASL_PASSWORD: 'p' } }), refused(/^environment variables? CUILINK_SASL_MECHANISM.*: 'sasl\.username' \(CUILINK_SASL_USERNAME\): Required/));
  assert.throws(() => loadStageConfig({ env: { CUILINK_SASL_USERNAME: 'u', CUILINK_SASL_PASSWORD: 'p' } }), refused(/CUILINK_SASL_USERNAME.*'sasl\.mechanism' \(CUILINK_SASL_MECHANISM\)/));
  assert.throws(() => loadStageConfig({ env: { CUILINK_WIRE_FORMAT: 'confluent' } }), refused(/'schemaRegistry\.url' \(CUILINK_SCHEMA_REGISTRY_URL\): required when avro\.wireFormat is confluent/));
  // An object made of the file and a variable, refused whole, names both.
  withFile('{"topics": {"input": "notes"}}', (file) => assert.throws(() => loadStageConfig({ file, env: { CUILINK_REVIEW_TOPIC: 'notes' } }), refused(new RegExp(`^config ${file} and environment variable CUILINK_REVIEW_TOPIC: 'topics': .*must be different topics`))));
});
