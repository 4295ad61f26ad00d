import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { OnnxSession } from '../../src/encode/onnx-session.ts';
import { DEFAULT_MODEL_DIR } from '../../src/link/default-index.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { stageConfigSchema, type StageConfig, type StageConfigInput } from '../../src/stream/stage-config.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { createRecordCodec } from '../../src/stream/avro/index.ts';
import { startStageRuntime } from '../../src/cli/stage-runtime.ts';
import { buildPhenotypeIndex, noteMessage, publish, readTopics, syntheticNotes, waitFor } from '../support/stream-fixtures.ts';

// Health that tells the truth (#27 item 5), on a real broker with the real default bi-encoder:
// /readyz through a broker outage of an idle stage, and an encoder that gives up while no note comes.
let broker: LocalBroker;
let root: string;
let brokerDir: string;
let kafka: KafkaClient;
let indexDir: string;
const codec = createRecordCodec();

const HEARTBEAT_MS = 1000;
/** The stated bound (docs/stream.md "Lifecycle and health"): max(10 s, 3 heartbeats). */
const BROKER_SILENCE_MS = Math.max(10_000, 3 * HEARTBEAT_MS);
const OUTAGE_MS = 20_000;
const PROBE_INTERVAL_MS = 1000;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-health-'));
  // A kept data dir: the broker is stopped and started again on it and on the same port.
  brokerDir = join(root, 'broker');
  broker = await startLocalBroker({ dataDir: brokerDir });
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'stream-health-test', logLevel: 'nothing' });
  indexDir = await buildPhenotypeIndex(join(root, 'index'));
});

after(async () => {
  await broker?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function topicsFor(name: string): Promise<{ input: string; output: string; deadLetter: string }> {
  const t = { input: `${name}.in`, output: `${name}.out`, deadLetter: `${name}.dead` };
  await ensureTopics(kafka, [t.input, t.output, t.deadLetter], { partitions: 2 });
  return t;
}

function configFor(name: string, topics: Awaited<ReturnType<typeof topicsFor>>, extra: Partial<StageConfigInput> = {}): StageConfig {
  return stageConfigSchema.parse({
    brokers: broker.brokers,
    groupId: `${name}-group`,
    topics,
    consumer: { sessionTimeoutMs: 10_000, heartbeatIntervalMs: HEARTBEAT_MS },
    retry: { maxAttempts: 8, initialBackoffMs: 100, maxBackoffMs: 2000 },
    http: { host: '127.0.0.1', port: 0 },
    telemetry: { logLevel: 'info', kafkaLogLevel: 'error', prometheus: false },
    linker: { indexDir, threads: 1, rerankerDir: false },
    ...extra,
  });
}

async function status(url: string): Promise<number> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return 0;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(`/readyz goes 503 within max(10 s, 3 heartbeats) of a broker outage, stays 503 through ${OUTAGE_MS / 1000} s of it, is 200 again after the restart, and a note published then is linked`, async (ctx) => {
  const topics = await topicsFor('outage');
  const logs: string[] = [];
  const runtime = await startStageRuntime(configFor('outage', topics), { logSink: (l) => logs.push(l) });
  const readyz = `${runtime.health!.url}/readyz`;
  const samples: { at: number; status: number }[] = [];
  let polling = true;
  let poll: Promise<void> | undefined;
  let brokerDown = false;
  const restartBroker = async (): Promise<void> => {
    broker = await startLocalBroker({ dataDir: brokerDir, port: Number(broker.brokers[0]!.split(':')[1]) });
    brokerDown = false;
  };
  try {
    await runtime.stage.whenJoined();
    const [warm] = syntheticNotes(1, 'outage-warm');
    await publish(kafka, topics.input, [await noteMessage(codec, warm!)]);
    await waitFor(() => runtime.stage.stats().counts.produced >= 1, 60_000, 'the warm-up note linked');
    await waitFor(async () => (await status(readyz)) === 200, 30_000, 'an idle, ready stage');

    poll = (async () => {
      while (polling) {
        const at = Date.now();
        samples.push({ at, status: await status(readyz) });
        await sleep(Math.max(0, 500 - (Date.now() - at)));
      }
    })();
    await sleep(1000);
    const stopCalledAt = Date.now();
    brokerDown = true;
    await broker.stop();
    const goneAt = Date.now();
    await sleep(OUTAGE_MS - (Date.now() - stopCalledAt));
    const restartAt = Date.now();
    const down = samples.filter((s) => s.at >= stopCalledAt && s.at < restartAt);
    assert.ok(samples.filter((s) => s.at < stopCalledAt).every((s) => s.status === 200), 'ready before the outage');
    const first503 = down.find((s) => s.status === 503);
    assert.ok(first503, `/readyz went 503 during the outage (${down.map((s) => s.status).join(' ')})`);
    ctx.diagnostic(`broker stop took ${goneAt - stopCalledAt} ms; first 503 ${first503.at - stopCalledAt} ms after the stop began, ${first503.at - goneAt} ms after the broker was gone (bound ${BROKER_SILENCE_MS} + 3000 ms)`);
    assert.ok(first503.at - stopCalledAt <= BROKER_SILENCE_MS + 3000, `first 503 ${first503.at - stopCalledAt} ms after the stop; the bound is ${BROKER_SILENCE_MS} ms (+3 s)`);
    const after503 = down.filter((s) => s.at >= first503.at);
    assert.deepEqual(after503.filter((s) => s.status !== 503).map((s) => ({ afterStop: s.at - stopCalledAt, status: s.status })), [], 'every /readyz while the broker stayed down was 503');
    assert.ok(after503.length >= (OUTAGE_MS - (first503.at - stopCalledAt)) / 500 - 4, `polled through the outage (${after503.length} samples)`);
    assert.equal(runtime.stage.live, true, 'an outage is not a fatal fault');

    await restartBroker();
    const upAt = Date.now();
    await waitFor(async () => (await status(readyz)) === 200, 60_000, '/readyz 200 after the broker came back');
    ctx.diagnostic(`broker restart took ${upAt - restartAt} ms; /readyz 200 again ${Date.now() - upAt} ms after it answered`);
    polling = false;
    await poll;

    const notes = syntheticNotes(3, 'outage-after');
    await publish(kafka, topics.input, await Promise.all(notes.map((n) => noteMessage(codec, n))));
    const expected = [warm!, ...notes].map((n) => n.noteId);
    const read = await readTopics(kafka, [topics.output, topics.deadLetter], (r) => expected.every((id) => r.get(topics.output)!.some((x) => x.key === id)), { timeoutMs: 60_000 });
    const linked = new Set(read.get(topics.output)!.map((r) => r.key));
    assert.deepEqual(expected.filter((id) => !linked.has(id)), [], '0 lost: every note is linked');
    assert.equal(read.get(topics.deadLetter)!.length, 0, 'nothing dead-lettered');
    assert.equal(runtime.stage.live, true);
    assert.ok(!logs.some((l) => l.includes('stopping without committing')), 'the stage did not stop');
  } catch (error) {
    ctx.diagnostic(`/readyz every 500 ms: ${samples.map((s) => s.status).join(' ')}`);
    for (const line of logs.filter((l) => !l.includes('"level":"info"'))) ctx.diagnostic(line);
    throw error;
  } finally {
    polling = false;
    await poll;
    // The next test needs the broker even when this one failed during the outage.
    if (brokerDown) await restartBroker();
    await runtime.close();
  }
});

test('an encoder that gives up while no note arrives: the health probe logs it once, the stage stops, /healthz and /readyz 503', async (ctx) => {
  const topics = await topicsFor('idle-encoder');
  const modelDir = join(root, 'model-copy');
  cpSync(DEFAULT_MODEL_DIR, modelDir, { recursive: true });
  const logs: { level: string; message: string; code?: string }[] = [];
  const config = configFor('idle-encoder', topics, { linker: { indexDir, modelDir, threads: 1, rerankerDir: false }, health: { probeIntervalMs: PROBE_INTERVAL_MS } });
  const runtime = await startStageRuntime(config, { logSink: (l) => logs.push(JSON.parse(l) as (typeof logs)[number]) });
  try {
    await runtime.stage.whenJoined();
    await waitFor(async () => (await status(`${runtime.health!.url}/readyz`)) === 200, 30_000, 'an idle, ready stage');
    const sessions = OnnxSession.openSessions();
    assert.equal(sessions.length, 1, 'the bi-encoder session');
    const session = sessions[0]!;
    let fatalAt = 0;
    const fatal = new Promise<unknown>((resolve) => runtime.stage.onFatal((error) => {
      fatalAt = Date.now();
      resolve(error);
    }));
    const gaveUp = new Promise<number>((resolve) => session.onFailed(() => resolve(Date.now())));
    // The model file disappears, then the worker dies: every restart fails, and no note comes.
    for (const file of readdirSync(modelDir).filter((f) => f.endsWith('.onnx'))) rmSync(join(modelDir, file));
    const killedAt = Date.now();
    await session.killWorker();
    const gaveUpAt = await gaveUp;
    const error = await Promise.race([fatal, sleep(PROBE_INTERVAL_MS + 5000).then(() => 'no fatal error')]);
    assert.equal((error as { code?: string }).code, 'ENCODER_FAILED', String(error));
    ctx.diagnostic(`encoder gave up ${gaveUpAt - killedAt} ms after the kill; the stage stopped ${fatalAt - gaveUpAt} ms later (probe every ${PROBE_INTERVAL_MS} ms)`);
    assert.ok(fatalAt - gaveUpAt <= PROBE_INTERVAL_MS + 2000, `found within a probe interval (+2 s): ${fatalAt - gaveUpAt} ms`);

    const probeLines = logs.filter((l) => l.message === 'linker health probe failed: linker unhealthy');
    assert.equal(probeLines.length, 1, 'logged once');
    assert.equal(probeLines[0]!.level, 'error');
    assert.equal(probeLines[0]!.code, 'ENCODER_FAILED', 'the line names the failure');
    assert.equal(runtime.stage.live, false);
    assert.equal(await status(`${runtime.health!.url}/healthz`), 503);
    assert.equal(await status(`${runtime.health!.url}/readyz`), 503);
    assert.equal(runtime.stage.stats().counts.consumed, 0, 'no note arrived');
    await sleep(2 * PROBE_INTERVAL_MS);
    assert.equal(logs.filter((l) => l.message === 'linker health probe failed: linker unhealthy').length, 1, 'still logged once');
  } finally {
    await runtime.close();
  }
});
