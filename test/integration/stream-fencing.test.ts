import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeBrokenBiEncoder } from '../support/broken-model.ts';
import { TopicCollector } from '../support/stream-fixtures.ts';
import { StageProcess } from '../support/stage-process.ts';
import { assignedPartitions, exitWithin, logsOf, StageFleet, tally } from '../support/stage-fleet.ts';

// Issue #27: fencing of a stalled instance by one that takes its transactional id, scaling under
// load with SIGTERM and SIGKILL, and a model that fails every run, all with real stage processes
// (`cuilink run --config`) on a real broker, over the small phenotype index.
// CUILINK_TEST_LOG_DIR=<dir> keeps every stage process's log lines there (one file per process).
const fleet = new StageFleet('fencing');

before(() => fleet.start());
after(() => fleet.stop());

/** Notes published per wave in the scaling scenario (four waves). */
const WAVE = 300;
const SCALE_NOTES = 4 * WAVE;

async function scalingScenario(name: string, delivery: 'exactly-once' | 'at-least-once', ctx: { diagnostic(message: string): void }): Promise<void> {
  const t = await fleet.topicsFor(name, 3);
  const out = new TopicCollector(fleet.kafka, t.output);
  const dead = new TopicCollector(fleet.kafka, t.deadLetter);
  await Promise.all([out.start(), dead.start()]);
  // One stable client and transactional id per slot, as a StatefulSet pod keeps its name.
  const slot = (i: number) =>
    fleet.stageConfig(name, t, { delivery, clientId: `${name}-slot-${i}`, ...(delivery === 'exactly-once' ? { transactionalId: `${name}-slot-${i}`, transactionTimeoutMs: 10_000 } : {}) });
  const stages: Record<string, StageProcess> = {};
  const produced = (s: StageProcess) => s.counter('cuilink_stream_produced_total');
  try {
    const sent = await fleet.publishNotes(t.input, `${name}-w0`, WAVE);
    // 1 instance.
    const s0 = (stages.s0 = fleet.startStage(`${name}-0`, slot(0)));
    await fleet.until(async () => (await produced(s0)) >= 20, 120_000, () => `slot 0 to produce:\n${logsOf(stages)}`);
    // 1 → 3.
    const s1 = (stages.s1 = fleet.startStage(`${name}-1`, slot(1)));
    const s2 = (stages.s2 = fleet.startStage(`${name}-2`, slot(2)));
    // Slot 0 alone may finish the first wave while the others load: the next wave waits for all three to own partitions.
    await fleet.until(() => [s0, s1, s2].every((s) => assignedPartitions(s).length === 1), 120_000, () => `one partition each:\n${logsOf(stages)}`);
    sent.push(...(await fleet.publishNotes(t.input, `${name}-w1`, WAVE)));
    await fleet.until(async () => (await produced(s1)) > 0 && (await produced(s2)) > 0, 60_000, () => `slots 1 and 2 to produce:\n${logsOf(stages)}`);
    // 3 → 2: slot 2 dies mid-stream (in exactly-once its open transaction is aborted by the broker on its timeout).
    const before2 = await produced(s2);
    sent.push(...(await fleet.publishNotes(t.input, `${name}-w2`, WAVE)));
    await fleet.until(async () => (await produced(s2)) > before2, 60_000, () => `slot 2 to be mid-stream:\n${logsOf(stages)}`);
    s2.kill('SIGKILL');
    assert.equal(await s2.exited, null, 'slot 2 killed by the signal');
    ctx.diagnostic(`slot 2 killed with ${out.keys().size} of ${sent.length} notes visible`);
    sent.push(...(await fleet.publishNotes(t.input, `${name}-w3`, WAVE)));
    // 2 → 1: slot 1 drains and leaves once it owns partitions again.
    await fleet.until(async () => assignedPartitions(s1).length > 0 && (await produced(s1)) > 0, 60_000, () => `slot 1 to own partitions:\n${logsOf(stages)}`);
    s1.kill('SIGTERM');
    assert.equal(await exitWithin(s1, 40_000), 0, `slot 1 drains and exits 0:\n${logsOf(stages)}`);
    ctx.diagnostic(`slot 1 stopped with ${out.keys().size} of ${sent.length} notes visible`);
    await fleet.until(() => sent.every((id) => out.keys().has(id)), 150_000, () => `every note in the output (${delivery}):\n${logsOf(stages)}`);
    s0.kill('SIGTERM');
    assert.equal(await exitWithin(s0, 40_000), 0, `slot 0 drains and exits 0:\n${logsOf(stages)}`);
    await new Promise((r) => setTimeout(r, 1500));
    const { lost, duplicated, unknown } = tally(out, sent);
    ctx.diagnostic(`${delivery}: ${out.records.length} records for ${sent.length} notes; lost ${lost.length}, duplicated ${duplicated.length}`);
    assert.deepEqual(lost, [], `0 lost (${delivery}):\n${logsOf(stages, 40)}`);
    if (delivery === 'exactly-once') assert.deepEqual(duplicated.slice(0, 50), [], `0 duplicates (${duplicated.length} duplicated):\n${logsOf(stages, 40)}`);
    assert.deepEqual(unknown, []);
    assert.equal(dead.records.length, 0, 'nothing dead-lettered');
  } finally {
    await out.stop();
    await dead.stop();
  }
}

test(`scaling 1 → 3 → 2 → 1 under load (${SCALE_NOTES} notes, 3 partitions, SIGKILL and SIGTERM), exactly-once: 0 lost, 0 duplicates`, async (ctx) => {
  await scalingScenario('scale-eos', 'exactly-once', ctx);
});

test(`scaling 1 → 3 → 2 → 1 under load (${SCALE_NOTES} notes, 3 partitions, SIGKILL and SIGTERM), at-least-once: 0 lost`, async (ctx) => {
  await scalingScenario('scale-alo', 'at-least-once', ctx);
});

/** A copy of the index that names the broken model as its own, so the stage opens it and links with it. */
function indexForModel(modelDir: string, dir: string): string {
  cpSync(fleet.indexDir, dir, { recursive: true });
  const manifestFile = join(dir, 'manifest.json');
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { model: { path: string; sha256: string } };
  manifest.model.path = modelDir;
  manifest.model.sha256 = createHash('sha256').update(readFileSync(join(modelDir, 'manifest.json'))).digest('hex');
  writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
  return dir;
}

test('a model that throws on every call, over a real broker: nothing dead-lettered, nothing committed, the stage exits non-zero or stays unready', async (ctx) => {
  const t = await fleet.topicsFor('broken-model', 2);
  const modelDir = writeBrokenBiEncoder(join(fleet.root, 'broken-model'));
  const brokenIndex = indexForModel(modelDir, join(fleet.root, 'broken-index'));
  const out = new TopicCollector(fleet.kafka, t.output);
  const dead = new TopicCollector(fleet.kafka, t.deadLetter);
  await Promise.all([out.start(), dead.start()]);
  const stages: Record<string, StageProcess> = {};
  try {
    await fleet.publishNotes(t.input, 'broken', 30);
    const stage = (stages.broken = fleet.startStage('broken-model', fleet.stageConfig('broken-model', t, {
      linker: { indexDir: brokenIndex, modelDir, threads: 1, rerankerDir: false, provider: 'cpu' },
      link: { cache: { maxEntries: 0 }, exactVectors: false },
      retry: { maxAttempts: 2, initialBackoffMs: 50, maxBackoffMs: 200 },
    })));
    // It must get as far as the broker and the linker (not refuse the model at start).
    await stage.untilLogged('http listening', 120_000);
    const readyz = async (): Promise<number | 'exited'> => {
      const listening = stage.lines.find((l) => l.includes('"message":"http listening"'))!;
      const { url } = JSON.parse(listening) as { url: string };
      try {
        return (await fetch(`${url}/readyz`)).status;
      } catch {
        return 'exited';
      }
    };
    // Exits non-zero, or says 503 for good: poll until one holds for 5 s after the records were consumed.
    let outcome: string | undefined;
    const deadline = Date.now() + 90_000;
    let unreadySince: number | undefined;
    while (outcome === undefined) {
      if (stage.child.exitCode !== null || stage.child.signalCode !== null) {
        outcome = `exit ${stage.child.exitCode ?? stage.child.signalCode}`;
        break;
      }
      const status = await readyz();
      if (status === 503) unreadySince ??= Date.now();
      else if (status !== 'exited') unreadySince = undefined;
      if (unreadySince !== undefined && Date.now() - unreadySince > 5000 && stage.logged('joined consumer group')) outcome = 'unready (503)';
      if (Date.now() > deadline) assert.fail(`neither exited nor stayed unready within 90 s (last /readyz ${status}):\n${logsOf(stages, 30)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    ctx.diagnostic(`broken model: ${outcome}`);
    if (outcome.startsWith('exit')) assert.notEqual(stage.child.exitCode, 0, `a non-zero exit:\n${logsOf(stages, 30)}`);
    assert.ok(stage.lines.some((l) => l.includes('INFERENCE_FAILED')), `the cause is named:\n${logsOf(stages, 30)}`);
    if (stage.child.exitCode === null) {
      stage.kill('SIGTERM');
      await exitWithin(stage, 30_000);
    }
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(dead.records.length, 0, `nothing dead-lettered:\n${logsOf(stages, 30)}`);
    assert.equal(out.records.length, 0, 'nothing linked');
    const offsets = await fleet.committed('broken-model-group', t.input);
    assert.ok(offsets.every((p) => p.offset <= 0), `nothing committed: ${JSON.stringify(offsets)}`);
  } finally {
    await out.stop();
    await dead.stop();
  }
});
