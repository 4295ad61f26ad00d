import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { stageConfigSchema, type StageConfig } from '../../src/stream/stage-config.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { createRecordCodec, SCHEMA_FINGERPRINT_HEADER } from '../../src/stream/avro/index.ts';
import { startStageRuntime } from '../../src/cli/stage-runtime.ts';
import { dlqInspect } from '../../src/cli/commands/dlq.ts';
import { dlqReplay } from '../../src/cli/commands/dlq-replay.ts';
import { REPLAYED_FROM_HEADER } from '../../src/stream/dead-letter-replay.ts';
import { replayTransactionalId } from '../../src/stream/replay-ledger.ts';
import { isProducerFencedCode } from '../../src/stream/kafka/kafka-errors.ts';
import { CuilinkError } from '../../src/kb/errors.ts';
import { buildPhenotypeIndex, noteMessage, publish, readTopics, syntheticNotes, type ReadRecord } from '../support/stream-fixtures.ts';
import { capture } from '../support/capture-console.ts';

// `cuilink dlq inspect` and `cuilink dlq replay` against a real broker and stage: records are
// dead-lettered (two notes over a limit, a tombstone, an empty note, a large record of an unknown
// schema whose dead letter is cut), inspected without note text, replayed in a dry run (nothing
// sent), and, after the stage restarts with a larger limit, replayed for real: exactly the two
// notes go back to the input topic with the replayed-from header and are linked. Replay then
// remembers (the ledger): run again it sends nothing, --again sends again, and a replay stopped
// mid-transaction leaves nothing visible and is fenced by the next.
const MARKER = 'ZQXPHIMARKER4410';
const DEAD_BYTES = 8192;
const topics = { input: 'dlq-cli.in', output: 'dlq-cli.out', deadLetter: 'dlq-cli.dead' };
const ledgerTopic = 'dlq-cli.dead.replayed';
let broker: LocalBroker;
let root: string;
let kafka: KafkaClient;
let indexDir: string;
let configFile: string;
const codec = createRecordCodec();

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-dlq-'));
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'dlq-cli-test', logLevel: 'nothing' });
  indexDir = await buildPhenotypeIndex(join(root, 'index'));
  await ensureTopics(kafka, [topics.input, topics.output], { partitions: 1 });
  await ensureTopics(kafka, [topics.deadLetter], { partitions: 1, configs: { 'max.message.bytes': String(DEAD_BYTES) } });
  configFile = join(root, 'stage.json');
  writeFileSync(configFile, JSON.stringify({ brokers: broker.brokers, topics, telemetry: { kafkaLogLevel: 'error' } }));
});

after(async () => {
  await broker?.stop();
  rmSync(root, { recursive: true, force: true });
});

function stageConfig(maxNoteChars: number): StageConfig {
  return stageConfigSchema.parse({
    brokers: broker.brokers,
    groupId: 'dlq-cli-group',
    topics,
    batching: { maxMentions: 16, maxInFlightMentions: 64 },
    limits: { maxNoteChars, maxMentionsPerNote: 20 },
    consumer: { sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1000 },
    http: { enabled: false },
    telemetry: { logLevel: 'warn', kafkaLogLevel: 'error', prometheus: false },
    linker: { indexDir, threads: 1, rerankerDir: false },
  });
}

async function topicExists(topic: string): Promise<boolean> {
  const admin = kafka.admin();
  try {
    return (await admin.listTopics()).includes(topic);
  } finally {
    await admin.close();
  }
}

async function endOffset(topic: string): Promise<number> {
  const admin = kafka.admin();
  try {
    return (await admin.topicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
  } finally {
    await admin.close();
  }
}

test('dlq inspect lists the dead letters without note text; replay skips the hopeless ones, dry-runs, then sends exactly the fixable originals back, once: run again it sends nothing, --again sends again, a replay stopped mid-transaction leaves nothing and is fenced', async (ctx) => {
  const [good, big1, big2, empty] = syntheticNotes(4, 'dlq-cli');
  const padded = (n: typeof big1) => ({ ...n!, text: `${n!.text} ${`${MARKER} `.repeat(80)}` });
  const oversized = [padded(big1), padded(big2)];
  const oversizedMessages = await Promise.all(oversized.map((n) => noteMessage(codec, n, { 'x-origin': 'dlq-cli' })));
  const unknownSchema = { key: 'dlq-cli-unknown', value: Buffer.alloc(20_000, 0x41), headers: { [SCHEMA_FINGERPRINT_HEADER]: 'f'.repeat(64) } };
  const messages = [
    await noteMessage(codec, good!),
    oversizedMessages[0]!,
    { key: 'dlq-cli-tombstone', value: null },
    unknownSchema,
    await noteMessage(codec, { ...empty!, text: '', mentions: [] }),
    oversizedMessages[1]!,
  ];

  const first = await startStageRuntime(stageConfig(200));
  try {
    await first.stage.whenJoined();
    await publish(kafka, topics.input, messages);
    await readTopics(kafka, [topics.output, topics.deadLetter], (r) => r.get(topics.output)!.length >= 1 && r.get(topics.deadLetter)!.length >= 5);
  } finally {
    await first.close();
  }

  // inspect: one line per dead letter, in offset order, then the summary; no note text anywhere.
  const inspect = await capture(() => dlqInspect.run(['--config', configFile]));
  assert.equal(inspect.code, 0);
  for (const line of inspect.out) ctx.diagnostic(line);
  const lines = inspect.out.slice(0, -1);
  assert.deepEqual(
    lines.map((l) => l.split(' ').slice(0, 2).join(' ')),
    ['0:0 NOTE_TOO_LARGE', '0:1 EMPTY_RECORD', '0:2 UNKNOWN_SCHEMA', '0:3 EMPTY_NOTE', '0:4 NOTE_TOO_LARGE'],
  );
  assert.match(inspect.out.at(-1)!, /^dlq inspect: dlq-cli\.dead: 5 records read, 5 matched; by code: NOTE_TOO_LARGE 2, EMPTY_NOTE 1, EMPTY_RECORD 1, UNKNOWN_SCHEMA 1; replay: never 2, yes 2, cut 1$/);
  for (const line of [...inspect.out, ...inspect.err]) assert.doesNotMatch(line, new RegExp(`${MARKER}|patient`, 'i'), 'no note text printed');
  const [tooLarge, , cut] = lines;
  // The first bytes may be note text (a record without framing): hidden without the PHI switch.
  assert.match(tooLarge!, new RegExp(`source=${topics.input}/0/1 key=${big1!.noteId} size=${(oversizedMessages[0]!.value as Buffer).length} sha256=[0-9a-f]{64} first=hidden cut=no replay=yes`));
  assert.match(cut!, /key=dlq-cli-unknown size=20000 sha256=[0-9a-f]{64} first=hidden cut=yes replay=cut/);
  assert.match(lines[1]!, /size=\(null\) sha256=- first=- cut=no replay=never/);

  const json = await capture(() => dlqInspect.run(['--config', configFile, '--code', 'NOTE_TOO_LARGE', '--json', '--since', '2000-01-01']));
  const objects = json.out.map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(objects.slice(0, -1).map((o) => [o.offset, o.errorCode, o.replay]), [['0', 'NOTE_TOO_LARGE', 'yes'], ['4', 'NOTE_TOO_LARGE', 'yes']]);
  assert.deepEqual((objects.at(-1)!.summary as Record<string, unknown>).matched, 2);
  const none = await capture(() => dlqInspect.run(['--config', configFile, '--until', '2000-01-01']));
  assert.match(none.out.at(-1)!, /5 records read, 0 matched$/);
  // --show-text is the one way to see the text.
  const shown = await capture(() => dlqInspect.run(['--config', configFile, '--offsets', '0', '--show-text']));
  assert.ok(shown.out.some((l) => l.includes(MARKER)), 'the note text with --show-text');
  assert.ok(shown.out[0]!.includes(` first=${(oversizedMessages[0]!.value as Buffer).subarray(0, 16).toString('hex')} `), 'and the first bytes');
  assert.match(shown.err.join('\n'), /note text \(PHI\) follows/);

  // A bad flag: one line naming it, exit code 2, before any broker is asked.
  const bad = spawnSync(process.execPath, ['bin/cuilink.js', 'dlq', 'inspect', '--config', configFile, '--code', 'NOT_A_CODE'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr.trim().split('\n').length, 1);
  assert.match(bad.stderr, /^cuilink dlq inspect: --code 'NOT_A_CODE' is not a dead-letter code/);
  await assert.rejects(dlqReplay.run(['--config', configFile, '--offsets', '0:99']), /--offsets 0:99: no record at that position of dlq-cli\.dead/);

  // Dry run (the default): the two notes would be sent, the rest skipped; nothing is produced.
  const inputEnd = await endOffset(topics.input);
  const dry = await capture(() => dlqReplay.run(['--config', configFile]));
  assert.equal(dry.code, 0);
  for (const line of dry.out) ctx.diagnostic(line);
  const wouldSend = dry.out.filter((l) => l.startsWith('would send '));
  assert.deepEqual(wouldSend.map((l) => l.split(' ').slice(2, 6).join(' ')), [`0:0 NOTE_TOO_LARGE → ${topics.input}`, `0:4 NOTE_TOO_LARGE → ${topics.input}`]);
  assert.deepEqual(dry.out.filter((l) => l.startsWith('skip ')).map((l) => l.split(':')[0]), ['skip 0', 'skip 0', 'skip 0']);
  assert.match(dry.out.at(-1)!, /^dlq replay \(dry run\): dlq-cli\.dead: 5 records read, 5 selected: 2 would be sent to dlq-cli\.in, 3 skipped \(never 2, cut 1\); nothing sent/);
  for (const line of dry.out) assert.doesNotMatch(line, new RegExp(MARKER));
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(await endOffset(topics.input), inputEnd, 'a dry run sends nothing');
  assert.equal(await topicExists(ledgerTopic), false, 'nor makes the ledger');
  const onlyHopeless = await capture(() => dlqReplay.run(['--config', configFile, '--code', 'EMPTY_RECORD,EMPTY_NOTE']));
  assert.equal(onlyHopeless.code, 3, 'nothing to send');

  // The fix: a larger limit. The restarted stage goes on from its committed offsets.
  const second = await startStageRuntime(stageConfig(5000));
  try {
    await second.stage.whenJoined();
    const sent = await capture(() => dlqReplay.run(['--config', configFile, '--execute']));
    assert.equal(sent.code, 0);
    assert.deepEqual(
      sent.out.filter((l) => l.startsWith('sent ')).map((l) => l.slice('sent '.length)),
      wouldSend.map((l) => l.slice('would send '.length)),
      '--execute sent exactly what the dry run printed',
    );
    assert.match(sent.out.at(-1)!, /2 sent to dlq-cli\.in \(transactional, recorded in dlq-cli\.dead\.replayed\), 3 skipped \(never 2, cut 1\)$/);
    assert.match(sent.out[0]!, /^created dlq-cli\.dead\.replayed \(replay ledger: dlq replay\): partitions 1, replication 1, .*cleanup\.policy compact$/);
    const ledgerAdmin = kafka.admin();
    try {
      assert.equal((await ledgerAdmin.describeTopicConfigs([ledgerTopic], ['cleanup.policy'])).get(ledgerTopic)?.get('cleanup.policy'), 'compact');
    } finally {
      await ledgerAdmin.close();
    }
    const read = await readTopics(kafka, [topics.input, topics.output], (r) => r.get(topics.input)!.length >= messages.length + 2 && r.get(topics.output)!.length >= 3);
    const replayed = read.get(topics.input)!.slice(messages.length);
    assert.equal(replayed.length, 2, 'exactly the two replayable originals');
    for (const [i, record] of replayed.entries()) {
      const original = oversizedMessages[i]!;
      assert.equal(record.key, oversized[i]!.noteId);
      assert.deepEqual(record.value, original.value, 'the original bytes');
      assert.equal(String(record.headers[REPLAYED_FROM_HEADER]), `${topics.deadLetter}/0/${i === 0 ? 0 : 4}`);
      assert.equal(String(record.headers['x-origin']), 'dlq-cli', 'the original headers');
      for (const [k, v] of Object.entries(original.headers!)) assert.equal(String(record.headers[k]), String(v), k);
    }
    const linked = (read.get(topics.output) as ReadRecord[]).map((r) => r.key).sort();
    assert.deepEqual(linked, [good!.noteId, big1!.noteId, big2!.noteId].sort(), 'the replayed notes are linked once fixed');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await endOffset(topics.deadLetter), 5, 'nothing dead-lettered again');

    // Replay remembers what it sent: the same --execute again (an operator re-running after a
    // crash, or from a second terminal) sends nothing and names each dead letter it skips.
    const inputAfterReplay = await endOffset(topics.input);
    const rerun = await capture(() => dlqReplay.run(['--config', configFile, '--execute']));
    for (const line of rerun.out) ctx.diagnostic(line);
    assert.equal(rerun.code, 3, 'nothing left to send');
    assert.deepEqual(rerun.out.filter((l) => l.startsWith('skip ') && l.includes('already replayed')).map((l) => l.split(' ')[1]), ['0:0', '0:4']);
    assert.match(rerun.out.at(-1)!, /: 0 sent to dlq-cli\.in .*, 5 skipped \(already-replayed 2, never 2, cut 1\)$/);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await endOffset(topics.input), inputAfterReplay, 'the second --execute sent nothing');

    // A replay stopped mid-transaction (killed after sending 0:4 and its ledger entry, before the
    // commit). The next replay takes the ledger's transactional id: the open transaction is
    // aborted (nothing of it ever visible) and the stopped one can no longer commit. The ledger it
    // reads then ends in aborted records, which read_committed never hands over.
    const zombie = kafka.producer({ transactionalId: replayTransactionalId(ledgerTopic), transactionTimeoutMs: 60_000 });
    await zombie.connect();
    const open = await zombie.transaction();
    await open.send({ topic: topics.input, messages: [{ ...oversizedMessages[1]!, headers: { ...oversizedMessages[1]!.headers, [REPLAYED_FROM_HEADER]: `${topics.deadLetter}/0/4`, 'dlq-cli-zombie': 'yes' } }] });
    await open.send({ topic: ledgerTopic, messages: [{ key: `${topics.deadLetter}/0/4`, value: '{"zombie":true}' }] });
    // --again: the ledger's 0:0 is sent once more.
    const forced = await capture(() => dlqReplay.run(['--config', configFile, '--execute', '--again', '--offsets', '0:0']));
    for (const line of forced.out) ctx.diagnostic(line);
    assert.equal(forced.code, 0);
    assert.match(forced.out.filter((l) => l.startsWith('sent '))[0]!, new RegExp(`^sent 0:0 NOTE_TOO_LARGE → ${topics.input} .* again \\(replayed before at \\d{4}-`));
    assert.match(forced.out.at(-1)!, /, 1 selected: 1 sent to dlq-cli\.in \(/);
    await assert.rejects(open.commit(), (error: unknown) => {
      ctx.diagnostic(`the stopped replay's commit: ${(error as Error).message}`);
      return error instanceof CuilinkError && isProducerFencedCode(error.code);
    });
    await zombie.close();
    const afterAgain = await readTopics(kafka, [topics.input], (r) => r.get(topics.input)!.length >= messages.length + 3);
    const replayedAll = afterAgain.get(topics.input)!.slice(messages.length);
    assert.deepEqual(replayedAll.map((r) => [r.key, String(r.headers[REPLAYED_FROM_HEADER])]), [
      [big1!.noteId, `${topics.deadLetter}/0/0`],
      [big2!.noteId, `${topics.deadLetter}/0/4`],
      [big1!.noteId, `${topics.deadLetter}/0/0`],
    ]);
    assert.ok(replayedAll.every((r) => r.headers['dlq-cli-zombie'] === undefined), "the stopped replay's record never became visible");

    // The dry run reads the ledger too; inspect says the same.
    const dryAfter = await capture(() => dlqReplay.run(['--config', configFile, '--code', 'NOTE_TOO_LARGE']));
    assert.equal(dryAfter.code, 3);
    assert.deepEqual(dryAfter.out.slice(0, -1).map((l) => l.split(' ').slice(0, 4).join(' ')), ['skip 0:0 NOTE_TOO_LARGE: already', 'skip 0:4 NOTE_TOO_LARGE: already']);
    assert.match(dryAfter.out.at(-1)!, /^dlq replay \(dry run\): dlq-cli\.dead: 5 records read, 2 selected: 0 would be sent to dlq-cli\.in, 2 skipped \(already-replayed 2\)$/);
    const inspected = await capture(() => dlqInspect.run(['--config', configFile]));
    assert.match(inspected.out.at(-1)!, /; replay: already-replayed 2, never 2, cut 1$/);
  } finally {
    await second.close();
  }
});

test('a topic given by --topic or --to that does not exist is called a typo to check, with the similar names there; the configured one still says topics create', async () => {
  const typo = (flag: string, topic: string, similar: string) => (error: unknown) =>
    error instanceof CuilinkError && error.code === 'TOPIC_MISSING' && new RegExp(`^${flag} ${topic.replace(/\./g, '\\.')}: no such topic on the brokers; check ${flag} \\(similar: ${similar.replace(/\./g, '\\.')}\\)$`).test(error.message);
  await assert.rejects(dlqInspect.run(['--config', configFile, '--topic', 'dlq-cli.daed']), typo('--topic', 'dlq-cli.daed', topics.deadLetter));
  await assert.rejects(dlqReplay.run(['--config', configFile, '--topic', 'dlq-cli.deadd']), typo('--topic', 'dlq-cli.deadd', topics.deadLetter));
  await assert.rejects(dlqReplay.run(['--config', configFile, '--to', 'dlq-cli.inn']), typo('--to', 'dlq-cli.inn', topics.input));
  await assert.rejects(dlqInspect.run(['--config', configFile, '--topic', 'unrelated-name']), (error: Error) => error.message === '--topic unrelated-name: no such topic on the brokers; check --topic (no topic there has a similar name)');
  const unset = join(root, 'unset.json');
  writeFileSync(unset, JSON.stringify({ brokers: broker.brokers, topics: { ...topics, deadLetter: 'dlq-cli.never-made' } }));
  await assert.rejects(dlqInspect.run(['--config', unset]), /topic\(s\) dlq-cli\.never-made do not exist on the brokers; create them with 'cuilink topics create'/);
});
