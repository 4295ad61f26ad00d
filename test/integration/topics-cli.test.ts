// From an empty broker to linked notes with the CLI only, as README's "run on a broker" steps do:
// `cuilink topics describe` (missing: exit 1), `cuilink topics create`, `describe` again (exit 0),
// `cuilink run` on missing topics (exit 3 naming `cuilink topics create --config FILE`), and
// `cuilink run --create-topics` on a fresh topic set linking a published note.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { createRecordCodec } from '../../src/stream/avro/index.ts';
import { ENV_VARS, type StageConfigInput } from '../../src/stream/stage-config.ts';
import { buildPhenotypeIndex, noteMessage, publish, syntheticNotes, TopicCollector, waitFor } from '../support/stream-fixtures.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
let broker: LocalBroker;
let root: string;
let kafka: KafkaClient;
let indexDir: string;
const children: ChildProcess[] = [];

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-topics-cli-'));
  [broker, indexDir] = await Promise.all([startLocalBroker(), buildPhenotypeIndex(join(root, 'index'))]);
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'topics-cli-test', logLevel: 'nothing' });
});

after(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await broker?.stop();
  rmSync(root, { recursive: true, force: true });
});

function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, CUILINK_LOG_LEVEL: 'info' };
  for (const [name] of ENV_VARS) if (name !== 'CUILINK_LOG_LEVEL') delete env[name];
  return env;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  lines: string[];
}

/** `node bin/cuilink.js ...args` to its end (or until `until` holds of its output, then SIGTERM). */
function cuilink(args: string[], options: { timeoutMs?: number } = {}): { child: ChildProcess; done: Promise<Ran>; output: () => string } {
  const child = spawn(process.execPath, ['bin/cuilink.js', ...args], { cwd: REPO, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  const done = new Promise<Ran>((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, lines: stdout.trim().split('\n').filter((l) => l.length > 0) });
    }),
  );
  return { child, done, output: () => stdout + stderr };
}

function writeConfig(name: string, config: StageConfigInput): string {
  const file = join(root, `${name}.json`);
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

function stageConfig(prefix: string): StageConfigInput {
  return {
    brokers: broker.brokers,
    groupId: `${prefix}-group`,
    topics: { input: `${prefix}.notes`, output: `${prefix}.linked`, deadLetter: `${prefix}.dead`, review: `${prefix}.review` },
    consumer: { sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 },
    http: { host: '127.0.0.1', port: 0 },
    linker: { indexDir, threads: 1 },
  };
}

test('topics describe → create → describe, then run fails naming topics create, then run --create-topics links a note', async () => {
  // 1. describe on an empty broker: every topic missing, exit 1, the create command named.
  const fileA = writeConfig('a', stageConfig('a'));
  const missing = await cuilink(['topics', 'describe', '--config', fileA, '--gold-topic', 'a.gold']).done;
  assert.equal(missing.code, 1, missing.stderr);
  assert.deepEqual(missing.lines.map((l) => l.split(' ').slice(0, 2).join(' ')), ['missing a.notes', 'missing a.linked', 'missing a.dead', 'missing a.review', 'missing a.gold']);
  assert.match(missing.stderr, new RegExp(`5 of 5 topics missing .*create them with 'cuilink topics create --config ${fileA} --gold-topic a.gold'`));

  // 2. create: one line per topic with its settings; the broker holds what was asked.
  const created = await cuilink(['topics', 'create', '--config', fileA, '--gold-topic', 'a.gold', '--partitions', '2', '--dead-letter-retention-ms', '86400000']).done;
  assert.equal(created.code, 0, created.stderr);
  assert.equal(created.lines.length, 5, created.stdout);
  for (const line of created.lines) assert.match(line, /^created a\.\S+ \([^)]+\): partitions 2, replication 1, max\.message\.bytes \d+, retention\.ms \d+$/);
  assert.match(created.stdout, /^created a\.dead \(dead-letter: stage\): partitions 2, replication 1, max\.message\.bytes 1114124, retention\.ms 86400000$/m);
  assert.match(created.stdout, /^created a\.linked \(output: stage, evaluator\): partitions 2, replication 1, max\.message\.bytes 2097152, retention\.ms 604800000$/m);
  const admin = kafka.admin();
  try {
    const configs = await admin.describeTopicConfigs(['a.dead', 'a.linked'], ['max.message.bytes', 'retention.ms']);
    assert.equal(configs.get('a.dead')?.get('retention.ms'), '86400000');
    assert.equal(configs.get('a.linked')?.get('max.message.bytes'), '2097152');
  } finally {
    await admin.close();
  }

  // 3. describe: all there, exit 0; a second create alters nothing and reports fewer partitions than asked.
  const described = await cuilink(['topics', 'describe', '--config', fileA, '--gold-topic', 'a.gold']).done;
  assert.equal(described.code, 0, described.stderr);
  assert.match(described.stdout, /^exists a\.notes \(input: stage, memory updater\): partitions 2, replication 1, max\.message\.bytes 1048588, retention\.ms 604800000, records 0$/m);
  const again = await cuilink(['topics', 'create', '--config', fileA, '--gold-topic', 'a.gold', '--partitions', '4']).done;
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /^exists a\.notes .*: partitions 2, .*; fewer partitions than the 4 asked \(not changed\)$/m);

  // 4. run on a config whose topics do not exist: exit 3, the message names `cuilink topics create --config FILE`.
  const fileB = writeConfig('b', stageConfig('b'));
  const refused = await cuilink(['run', '--config', fileB], { timeoutMs: 60_000 }).done;
  assert.equal(refused.code, 3, refused.stderr);
  assert.match(refused.stderr, new RegExp(`TOPIC_MISSING.*do not exist on the brokers; create them with 'cuilink topics create --config ${fileB}'`));

  // 5. run --create-topics on that fresh set: topics created, a published note comes out linked.
  const stage = cuilink(['run', '--config', fileB, '--create-topics'], { timeoutMs: 80_000 });
  await waitFor(() => /"message":"joined consumer group"/.test(stage.output()) || stage.child.exitCode !== null, 60_000, 'the stage joined');
  assert.equal(stage.child.exitCode, null, stage.output());
  assert.match(stage.output(), /"message":"topic created".*"topic":"b\.notes"/);
  const collector = new TopicCollector(kafka, 'b.linked');
  await collector.start();
  try {
    const [note] = syntheticNotes(1, 'topics-cli');
    await publish(kafka, 'b.notes', [await noteMessage(createRecordCodec(), note!)]);
    await waitFor(() => collector.keys().has(note!.noteId), 30_000, 'the note linked on b.linked');
  } finally {
    await collector.stop();
  }
  stage.child.kill('SIGTERM');
  assert.equal((await stage.done).code, 0, stage.output().slice(-2000));
  const after = await cuilink(['topics', 'describe', '--config', fileB]).done;
  assert.equal(after.code, 0, after.stderr);
  assert.match(after.stdout, /^exists b\.linked .*, records [1-9]\d*$/m);
});

test('run checks the broker and its topics before it loads the linker: a missing topic or a refused broker is named, not the index', async () => {
  // An index that cannot load stands for one that takes minutes (a first default index): either way the topic must come first.
  const noIndex = join(root, 'no-such-index');
  const fileC = writeConfig('c', { ...stageConfig('c'), linker: { indexDir: noIndex, threads: 1 } });
  const refused = await cuilink(['run', '--config', fileC], { timeoutMs: 60_000 }).done;
  assert.equal(refused.code, 3, refused.stderr);
  assert.match(refused.stderr, /TOPIC_MISSING.*topic\(s\) c\.notes, c\.linked, c\.dead, c\.review do not exist/);
  assert.doesNotMatch(refused.stderr, new RegExp(`${noIndex}|"linker loaded"`), 'nothing of the linker before the topic check');

  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as { port: number };
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const fileD = writeConfig('d', { ...stageConfig('d'), brokers: [`127.0.0.1:${port}`], linker: { indexDir: noIndex, threads: 1 } });
  const down = await cuilink(['run', '--config', fileD], { timeoutMs: 120_000 }).done;
  assert.equal(down.code, 3, down.stderr);
  assert.match(down.stderr, /ECONNREFUSED/);
  assert.doesNotMatch(down.stderr, new RegExp(`${noIndex}|"linker loaded"`), 'nothing of the linker before the broker answers');
});
