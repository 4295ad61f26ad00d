import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { createRecordCodec } from '../../src/stream/avro/index.ts';
import type { StageConfigInput } from '../../src/stream/stage-config.ts';
import { buildPhenotypeIndex, noteMessage, publish, syntheticNotes, TopicCollector, waitFor } from '../support/stream-fixtures.ts';
import { StageProcess } from '../support/stage-process.ts';

// The stage as operators run it (`cuilink run --config`), killed, restarted, scaled and stopped
// on a real broker; the real default bi-encoder over a small real index.
let broker: LocalBroker;
let root: string;
let kafka: KafkaClient;
let indexDir: string;
const codec = createRecordCodec();
const running: StageProcess[] = [];

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-stream-proc-'));
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'stream-process-test', logLevel: 'nothing' });
  indexDir = await buildPhenotypeIndex(join(root, 'index'));
});

after(async () => {
  for (const p of running) if (p.child.exitCode === null) p.kill('SIGKILL');
  await broker?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function topics(name: string): Promise<{ input: string; output: string; deadLetter: string }> {
  const t = { input: `${name}.in`, output: `${name}.out`, deadLetter: `${name}.dead` };
  await ensureTopics(kafka, [t.input, t.output], { partitions: 2 });
  await ensureTopics(kafka, [t.deadLetter], { partitions: 1 });
  return t;
}

function stageConfig(name: string, t: Awaited<ReturnType<typeof topics>>, extra: Partial<StageConfigInput> = {}): StageConfigInput {
  return {
    brokers: broker.brokers,
    groupId: `${name}-group`,
    topics: t,
    // Small batches: many produce/commit steps, so a kill lands between them.
    batching: { maxMentions: 6, maxWaitMs: 2, maxInFlightMentions: 24 },
    consumer: { sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 },
    drainTimeoutMs: 20_000,
    http: { host: '127.0.0.1', port: 0 },
    linker: { indexDir, threads: 1 },
    // The models on every mention, so a kill lands mid-stream: the link cache and stored exact-name
    // vectors would link these repeated synthetic mentions before the kill.
    link: { cache: { maxEntries: 0 }, exactVectors: false },
    ...extra,
  };
}

function startStage(name: string, config: StageConfigInput): StageProcess {
  const p = new StageProcess(root, name, config);
  running.push(p);
  return p;
}

async function publishNotes(topic: string, prefix: string, count: number): Promise<string[]> {
  const notes = syntheticNotes(count, prefix);
  await publish(kafka, topic, await Promise.all(notes.map((n) => noteMessage(codec, n))));
  return notes.map((n) => n.noteId);
}

/** Lets the collector read what a killed stage had written, so a count after it is the whole. */
const settle = () => new Promise((r) => setTimeout(r, 2000));

/** Committed group offsets per input partition. */
async function committed(groupId: string, topic: string): Promise<Map<number, number>> {
  const admin = kafka.admin();
  try {
    const offsets = await admin.committedOffsets(groupId, topic);
    return new Map(offsets.map((p) => [p.partition, Number(p.offset)]));
  } finally {
    await admin.close();
  }
}

test('at-least-once: SIGKILL mid-stream loses nothing after a restart; SIGTERM drains, commits exactly what was produced and exits 0', async (ctx) => {
  const t = await topics('alo');
  const config = stageConfig('alo', t);
  const out = new TopicCollector(kafka, t.output);
  await out.start();
  try {
    // A first wave long enough that a kill after its first outputs lands mid-stream on a fast machine.
    const sent = await publishNotes(t.input, 'alo-a', 120);
    const first = startStage('alo-1', config);
    // The stage's own count, not the collector's: a collector that lags would let the wave finish.
    await waitFor(async () => (await first.counter('cuilink_stream_produced_total')) >= 6, 120_000, 'the first outputs');
    first.kill('SIGKILL');
    assert.equal(await first.exited, null, 'killed by the signal');
    await settle();
    const producedBeforeKill = out.keys().size;
    ctx.diagnostic(`killed after ${producedBeforeKill} of ${sent.length} notes`);
    assert.ok(producedBeforeKill < sent.length, `killed mid-stream (${producedBeforeKill} of ${sent.length} done)`);
    sent.push(...(await publishNotes(t.input, 'alo-b', 20)));

    const second = startStage('alo-2', config);
    await waitFor(() => sent.every((id) => out.keys().has(id)), 120_000, 'every note in the output after the restart');
    // SIGTERM while a third wave is in flight.
    sent.push(...(await publishNotes(t.input, 'alo-c', 30)));
    const before = out.records.length;
    await waitFor(() => out.records.length > before, 60_000, 'the third wave to start');
    second.kill('SIGTERM');
    assert.equal(await second.exited, 0, `exit 0 after draining:\n${second.lines.slice(-5).join('\n')}`);
    assert.ok(second.logged('stopped'), 'drained');
    await new Promise((r) => setTimeout(r, 1000));
    const offsets = await committed(config.groupId!, t.input);
    for (const [partition, next] of offsets) {
      const sources = new Set(out.records.map((r) => String(r.headers['cuilink-source']).split('/')).filter((s) => s[1] === String(partition)).map((s) => Number(s[2])));
      for (let offset = 0; offset < next; offset++) assert.ok(sources.has(offset), `partition ${partition} offset ${offset} is committed, so it must have been produced`);
      assert.ok(Math.max(-1, ...sources) < next, `partition ${partition}: everything produced was committed before exit (${Math.max(...sources)} < ${next})`);
    }

    const third = startStage('alo-3', config);
    await waitFor(() => sent.every((id) => out.keys().has(id)), 120_000, 'every note after the SIGTERM restart');
    // The second stage may have drained the whole third wave; SIGTERM only once this one runs.
    await third.untilLogged('joined consumer group', 120_000);
    third.kill('SIGTERM');
    assert.equal(await third.exited, 0);
    for (const id of sent) assert.ok(out.keys().has(id), `${id} in the output`);
  } finally {
    await out.stop();
  }
});

test('SIGTERM while the stage is still loading its linker: it does not start, commits nothing and exits 0', async () => {
  const t = await topics('early');
  const config = stageConfig('early', t);
  const stage = startStage('early-1', config);
  await stage.untilLogged('http listening', 120_000);
  stage.kill('SIGTERM');
  assert.equal(await stage.exited, 0, `exit 0 on a signal during startup:\n${stage.lines.slice(-5).join('\n')}`);
  const exiting = stage.lines.find((l) => l.includes('"message":"exiting"'));
  assert.ok(exiting?.includes('"reason":"SIGTERM"'), `the exit line names the signal: ${exiting}`);
  assert.ok(!stage.logged('stage started') && !stage.logged('joined consumer group'), `nothing consumed:\n${stage.lines.slice(-5).join('\n')}`);
});

test('exactly-once: after SIGKILL and restart, every note appears exactly once among committed output records', async (ctx) => {
  const t = await topics('eos');
  const config = stageConfig('eos', t, { delivery: 'exactly-once', transactionalId: 'eos-stage-1' });
  const out = new TopicCollector(kafka, t.output);
  await out.start();
  try {
    // Committed output becomes visible a few transactions late, so this wave is longer still.
    const sent = await publishNotes(t.input, 'eos-a', 240);
    const first = startStage('eos-1', config);
    await waitFor(async () => (await first.counter('cuilink_stream_produced_total')) >= 6, 120_000, 'the first committed outputs');
    first.kill('SIGKILL');
    await first.exited;
    await settle();
    ctx.diagnostic(`killed after ${out.keys().size} of ${sent.length} notes`);
    assert.ok(out.keys().size < sent.length, `killed mid-stream (${out.keys().size} of ${sent.length} done)`);
    sent.push(...(await publishNotes(t.input, 'eos-b', 20)));
    const second = startStage('eos-2', config);
    await waitFor(() => sent.every((id) => out.keys().has(id)), 120_000, 'every note after the restart');
    second.kill('SIGTERM');
    assert.equal(await second.exited, 0);
    await new Promise((r) => setTimeout(r, 1000));
    const counts = new Map<string, number>();
    for (const r of out.records) counts.set(r.key!, (counts.get(r.key!) ?? 0) + 1);
    assert.deepEqual([...counts].filter(([, n]) => n !== 1), [], 'no duplicates among committed records');
    assert.equal(counts.size, sent.length);
  } finally {
    await out.stop();
  }
});

test('a second consumer joining mid-stream (rebalance) loses nothing', async () => {
  const t = await topics('rebalance');
  const config = stageConfig('rebalance', t);
  const out = new TopicCollector(kafka, t.output);
  await out.start();
  try {
    const sent = await publishNotes(t.input, 'rb-a', 40);
    const first = startStage('rb-1', config);
    await waitFor(() => out.records.length >= 4, 120_000, 'the first outputs');
    const second = startStage('rb-2', config);
    for (let wave = 0; wave < 4; wave++) {
      sent.push(...(await publishNotes(t.input, `rb-w${wave}`, 10)));
      await new Promise((r) => setTimeout(r, 500));
    }
    await second.untilLogged('joined consumer group', 120_000);
    await waitFor(() => sent.every((id) => out.keys().has(id)), 120_000, 'every note after the rebalance');
    const joins = first.lines.filter((l) => l.includes('"message":"joined consumer group"')).length;
    assert.ok(joins >= 2, 'the first consumer went through a rebalance');
    first.kill('SIGTERM');
    second.kill('SIGTERM');
    assert.deepEqual(await Promise.all([first.exited, second.exited]), [0, 0]);
    for (const id of sent) assert.ok(out.keys().has(id), `${id} in the output`);
  } finally {
    await out.stop();
  }
});
