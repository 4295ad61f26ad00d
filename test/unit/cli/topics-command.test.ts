// `cuilink topics create|describe`: each bad input is one line naming the flag, id or file, exit 2,
// before any broker is contacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCommandFor, topicPlanOptionsFromFlags, topicsConfigFromFlags } from '../../../src/cli/commands/topics.ts';
import { assertRefusedInOneLine, cli } from '../../support/cli-run.ts';

test('flag values are checked and each bad one named', () => {
  assert.deepEqual(topicPlanOptionsFromFlags({}), { partitions: 3, replicationFactor: 1, maxMessageBytes: 1_048_588, retentionMs: 604_800_000, deadLetterRetentionMs: 2_592_000_000, goldTopic: undefined });
  assert.equal(topicPlanOptionsFromFlags({ 'gold-topic': 'none' }).goldTopic, null);
  assert.equal(topicPlanOptionsFromFlags({ 'retention-ms': '-1' }).retentionMs, -1);
  const refused: [Record<string, string>, RegExp][] = [
    [{ partitions: '0' }, /^--partitions must be ≥ 1, got 0$/],
    [{ partitions: '2.5' }, /^--partitions must be an integer/],
    [{ partitions: 'three' }, /^--partitions must be a number, got 'three'$/],
    [{ replication: '0' }, /^--replication must be ≥ 1/],
    [{ 'max-message-bytes': '100' }, /^--max-message-bytes must be ≥ 4096, got 100$/],
    [{ 'max-message-bytes': '1e12' }, /^--max-message-bytes must be ≤ 104857600/],
    [{ 'retention-ms': '0' }, /^--retention-ms must be -1 \(keep forever\) or at least 60000/],
    [{ 'dead-letter-retention-ms': '-2' }, /^--dead-letter-retention-ms must be ≥ -1/],
    [{ 'gold-topic': '' }, /^--gold-topic is empty/],
  ];
  for (const [values, message] of refused) assert.throws(() => topicPlanOptionsFromFlags(values), (error: Error) => message.test(error.message), JSON.stringify(values));
});

test('--brokers overrides the config; a bad broker is named', () => {
  assert.deepEqual(topicsConfigFromFlags({ brokers: 'a:1, b:2' }, {}).brokers, ['a:1', 'b:2']);
  assert.deepEqual(topicsConfigFromFlags({}, { CUILINK_BROKERS: 'c:3' }).brokers, ['c:3']);
  assert.throws(() => topicsConfigFromFlags({ brokers: 'nohost' }, {}), /^InputError: --brokers: 'nohost' is not host:port$/);
  assert.throws(() => topicsConfigFromFlags({ brokers: ' , ' }, {}), /--brokers is empty/);
});

test('the create command named in messages carries the same --config and --gold-topic', () => {
  assert.equal(createCommandFor({}), 'cuilink topics create');
  assert.equal(createCommandFor({ config: 'stage.json', 'gold-topic': 'g' }), 'cuilink topics create --config stage.json --gold-topic g');
});

test('the CLI: one line naming the flag or file, exit 2, nothing contacted', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-topics-flags-'));
  try {
    const badJson = join(dir, 'bad.json');
    writeFileSync(badJson, '{"topics": {"input": "a b"}}');
    const cases: [string[], RegExp][] = [
      [['topics', 'create'], /^cuilink topics create: no brokers: pass --brokers host:port, set CUILINK_BROKERS/],
      [['topics', 'describe'], /^cuilink topics describe: no brokers: pass --brokers/],
      [['topics', 'create', '--brokers', '127.0.0.1:1', '--partitions=-3'], /^cuilink topics create: --partitions must be ≥ 1, got -3$/],
      [['topics', 'create', '--brokers', '127.0.0.1:1', '--replication', 'x'], /^cuilink topics create: --replication must be a number/],
      [['topics', 'create', '--brokers', 'x'], /^cuilink topics create: --brokers: 'x' is not host:port$/],
      [['topics', 'create', '--brokers', '127.0.0.1:1', '--config', join(dir, 'missing.json')], /^cuilink topics create: cannot read config file .*missing\.json/],
      [['topics', 'describe', '--brokers', '127.0.0.1:1', '--config', badJson], /^cuilink topics describe: config .*bad\.json: 'topics\.input': a topic name is/],
      [['topics', 'create', '--brokers', '127.0.0.1:1', '--gold-topic', 'cuilink.notes'], /^cuilink topics create: --gold-topic cuilink\.notes is the stage's input topic/],
      [['topics', 'create', '--brokers', '127.0.0.1:1', '--nope'], /^cuilink topics create: Unknown option '--nope'/],
      [['topics'], /^cuilink: 'topics' needs a subcommand: topics create, topics describe, topics read$/],
    ];
    assertRefusedInOneLine(cases);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('help lists both commands; run takes --create-topics', () => {
  const help = cli(['--help']);
  assert.match(help.stdout, /^ {2}topics create +Create the topics/m);
  assert.match(help.stdout, /^ {2}topics describe +One line per topic/m);
  assert.match(cli(['run', '--help']).stdout, /--create-topics +local use, not for production/);
});
