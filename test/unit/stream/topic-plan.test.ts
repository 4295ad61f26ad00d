// The topic list of `cuilink topics create|describe` and `cuilink run --create-topics`: computed
// from the same stage config the stage reads, with the settings docs/topics.md documents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadStageConfig } from '../../../src/stream/stage-config.ts';
import { differences, linkedNoteBytesEstimate, planTopics, TOPIC_DEFAULTS, type PlannedTopic } from '../../../src/stream/topic-plan.ts';
import { TopicMissingError } from '../../../src/stream/topics.ts';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '../../../src/stream/topic-size-limits.ts';

const config = (overrides: Record<string, unknown> = {}) => loadStageConfig({ env: {}, overrides });
const byRole = (plan: PlannedTopic[]) => Object.fromEntries(plan.map((p) => [p.role, p]));

test('defaults: the stage topics and the gold topic, 3 partitions, replication 1, dead letters kept longer', () => {
  const plan = planTopics(config());
  assert.deepEqual(plan.map((p) => [p.role, p.topic]), [['input', 'cuilink.notes'], ['output', 'cuilink.linked'], ['deadLetter', 'cuilink.dead-letter'], ['gold', 'cuilink.gold']]);
  for (const p of plan) {
    assert.equal(p.partitions, 3);
    assert.equal(p.replicationFactor, 1);
  }
  const r = byRole(plan);
  assert.equal(r.input!.maxMessageBytes, KAFKA_DEFAULT_MAX_MESSAGE_BYTES);
  assert.equal(r.input!.retentionMs, 7 * 86_400_000);
  assert.equal(r.deadLetter!.retentionMs, 30 * 86_400_000);
  assert.ok(r.deadLetter!.maxMessageBytes > r.input!.maxMessageBytes, 'a dead letter holds a whole input record and its envelope');
  assert.ok(r.output!.maxMessageBytes >= linkedNoteBytesEstimate(config()), 'the output topic holds the largest LinkedNote the limits allow');
  assert.equal(r.output!.maxMessageBytes % 1_048_576, 0, 'rounded up to MiB');
});

test('the optional stage topics are listed when configured, from the same config and environment as the stage', () => {
  const fromEnv = loadStageConfig({ env: { CUILINK_INPUT_TOPIC: 'in', CUILINK_REVIEW_TOPIC: 'rev', CUILINK_LABEL_TOPIC: 'asks', CUILINK_MEASURE_TOPIC: 'measure' } });
  assert.deepEqual(planTopics(fromEnv, { goldTopic: 'g' }).map((p) => `${p.role}=${p.topic}`), ['input=in', 'output=cuilink.linked', 'deadLetter=cuilink.dead-letter', 'review=rev', 'labelRequests=asks', 'measureRequests=measure', 'gold=g']);
  assert.deepEqual(planTopics(fromEnv, { goldTopic: null }).map((p) => p.role).includes('gold'), false, "--gold-topic none leaves it out");
});

test('flags set every topic; the output still gets what its LinkedNotes need, the dead-letter topic headroom', () => {
  const plan = byRole(planTopics(config(), { partitions: 6, replicationFactor: 3, maxMessageBytes: 8192, retentionMs: -1, deadLetterRetentionMs: 86_400_000 }));
  assert.equal(plan.input!.partitions, 6);
  assert.equal(plan.gold!.replicationFactor, 3);
  assert.equal(plan.input!.maxMessageBytes, 8192);
  assert.equal(plan.deadLetter!.maxMessageBytes, 8192 + 65_536);
  assert.ok(plan.output!.maxMessageBytes >= linkedNoteBytesEstimate(config()));
  assert.equal(plan.input!.retentionMs, -1);
  assert.equal(plan.deadLetter!.retentionMs, 86_400_000);
  // A larger topK or mention limit raises the output's limit; topics.maxMessageBytes is a floor for output and dead letters.
  const big = byRole(planTopics(config({ 'link.topK': 50, 'topics.maxMessageBytes': 3_000_000 })));
  assert.ok(big.output!.maxMessageBytes > byRole(planTopics(config())).output!.maxMessageBytes);
  assert.ok(big.deadLetter!.maxMessageBytes >= 3_000_000);
  assert.equal(TOPIC_DEFAULTS.goldTopic, 'cuilink.gold');
});

test('a gold topic that is one of the stage topics, or not a topic name, is refused naming --gold-topic', () => {
  assert.throws(() => planTopics(config(), { goldTopic: 'cuilink.linked' }), /^InputError: --gold-topic cuilink\.linked is the stage's output topic/);
  assert.throws(() => planTopics(config(), { goldTopic: 'bad topic' }), /--gold-topic 'bad topic': a topic name is/);
});

test('an existing topic that falls short of the plan is reported, not changed', () => {
  const [output] = planTopics(config()).filter((p) => p.role === 'output');
  assert.deepEqual(differences({ planned: output!, exists: true, partitions: 1, maxMessageBytes: '1048588' }), [
    `fewer partitions than the ${output!.partitions} asked (not changed)`,
    `max.message.bytes below the ${output!.maxMessageBytes} planned: large LinkedNotes get their candidate lists cut (not changed)`,
  ]);
  assert.deepEqual(differences({ planned: output!, exists: true, partitions: 12, maxMessageBytes: String(output!.maxMessageBytes) }), []);
});

test('TOPIC_MISSING says to run cuilink topics create', () => {
  const error = new TopicMissingError(['a', 'b']);
  assert.equal(error.code, 'TOPIC_MISSING');
  assert.match(error.message, /^topic\(s\) a, b do not exist on the brokers; create them with 'cuilink topics create'/);
  assert.match(new TopicMissingError(['a'], "'cuilink topics create --config s.json'").message, /--config s\.json/);
});

test('docs/topics.md states the defaults the code uses', () => {
  const doc = readFileSync('docs/topics.md', 'utf8');
  for (const value of [TOPIC_DEFAULTS.partitions, TOPIC_DEFAULTS.replicationFactor, TOPIC_DEFAULTS.maxMessageBytes, TOPIC_DEFAULTS.retentionMs, TOPIC_DEFAULTS.deadLetterRetentionMs, TOPIC_DEFAULTS.goldTopic]) {
    assert.ok(doc.includes(`\`${value}\``), `docs/topics.md mentions \`${value}\``);
  }
});
