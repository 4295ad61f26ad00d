import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { goldSample } from '../../src/cli/commands/gold-sample.ts';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { capture } from '../support/capture-console.ts';

// gold-sample --create-topics on a corpus it refuses (a label of more than 64 ids) used to create
// the gold and notes topics first and refuse the corpus after: a refused run left the broker
// changed. On the real local broker: a refused corpus creates nothing; the same flags with a
// readable corpus create both topics (so the check below would see one created).
let broker: LocalBroker;
let kafka: KafkaClient;
let root: string;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-gold-sample-refusal-'));
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'gold-sample-refusal-test', logLevel: 'nothing' });
});

after(async () => {
  await broker?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function topicsNamed(prefix: string): Promise<string[]> {
  const admin = kafka.admin();
  try {
    return (await admin.listTopics()).filter((t) => t.startsWith(prefix)).sort();
  } finally {
    await admin.close();
  }
}

function corpusWithIds(name: string, count: number): string {
  const file = join(root, name);
  const ids = Array.from({ length: count }, (_, i) => `D${String(100_000 + i)}`).join('|');
  writeFileSync(file, ['1|t|Anemia.', '1|a|', '1\t0\t6\tAnemia\tDisease\tD000740', '', '2|t|Many things.', '2|a|', `2\t0\t4\tMany\tDisease\t${ids}`, ''].join('\n'));
  return file;
}

const run = (corpus: string, prefix: string) =>
  goldSample.run(['--corpus', corpus, '--fraction', '1', '--create-topics', '--gold-topic', `${prefix}.gold`, '--notes-topic', `${prefix}.notes`, '--brokers', broker.brokers.join(',')]);

test('gold-sample --create-topics: a refused corpus creates no topic; a readable one creates the gold and notes topics', { timeout: 300_000 }, async () => {
  const refused = corpusWithIds('refused.PubTator', 65);
  await assert.rejects(run(refused, 'refused'), (e: Error & { code?: string }) => e.code === 'PARSE_ERROR' && e.message.startsWith(`${refused}:7: document 2, mention 0-4: a gold label naming 65 concept ids`));
  assert.deepEqual(await topicsNamed('refused.'), [], 'no topic created for a refused corpus');

  const readable = corpusWithIds('readable.PubTator', 64);
  const { code, out } = await capture(() => run(readable, 'readable'));
  assert.equal(code, 0);
  assert.match(out.join('\n'), /2 gold mentions → readable\.gold, 2 notes → readable\.notes/);
  assert.deepEqual(await topicsNamed('readable.'), ['readable.gold', 'readable.notes']);
});
