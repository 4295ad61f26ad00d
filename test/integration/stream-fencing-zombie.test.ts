import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TopicCollector, waitFor } from '../support/stream-fixtures.ts';
import { StageProcess } from '../support/stage-process.ts';
import { assignedPartitions, exitWithin, logsOf, StageFleet, tally } from '../support/stage-fleet.ts';

// Issue #27: fencing of a stalled instance by one that takes its transactional id, with real stage
// processes (`cuilink run --config`) on a real broker, over the small phenotype index
// (stream-fencing.test.ts has scaling under load and the model that fails every run).
// CUILINK_TEST_LOG_DIR=<dir> keeps every stage process's log lines there (one file per process).
const fleet = new StageFleet('fencing');

before(() => fleet.start());
after(() => fleet.stop());

test('zombie fencing: a stage stalled (SIGSTOP) past its session timeout is fenced by a second one with the same transactional id; every note exactly once under read_committed', async (ctx) => {
  const t = await fleet.topicsFor('fence', 2);
  // One transactional id for both: B is A's replacement (a StatefulSet pod rescheduled while A hangs).
  const shared = { delivery: 'exactly-once' as const, transactionalId: 'fence-shared-txn', transactionTimeoutMs: 20_000, link: { cache: { maxEntries: 0 }, exactVectors: false } };
  const out = new TopicCollector(fleet.kafka, t.output);
  const dead = new TopicCollector(fleet.kafka, t.deadLetter);
  await Promise.all([out.start(), dead.start()]);
  const stages: Record<string, StageProcess> = {};
  try {
    // Three waves, so that each instance surely has work whatever the machine's speed: A the first
    // (it may finish it before it is stopped), B the second (published while A is stopped), and the
    // third, published once A is awake again, reaches whichever partitions A takes back when it
    // rejoins, so the zombie has to try a transaction with its fenced producer.
    const sent = await fleet.publishNotes(t.input, 'fence-w1', 150);
    const a = (stages.a = fleet.startStage('fence-a', fleet.stageConfig('fence', t, { ...shared, clientId: 'fence-a' })));
    await a.untilLogged('joined consumer group', 120_000);
    await waitFor(async () => (await a.counter('cuilink_stream_produced_total')) >= 20, 120_000, 'A to produce its first outputs');
    a.kill('SIGSTOP');
    const stoppedAt = Date.now();
    const producedByA = out.keys().size;
    ctx.diagnostic(`A stopped after ~${producedByA} of ${sent.length} notes visible`);
    sent.push(...(await fleet.publishNotes(t.input, 'fence-w2', 150)));

    const b = (stages.b = fleet.startStage('fence-b', fleet.stageConfig('fence', t, { ...shared, clientId: 'fence-b' })));
    // B fences A's producer when it connects (InitProducerId on the shared id), then takes every partition once A's session expired.
    await fleet.until(() => assignedPartitions(b).length === 2, 120_000, () => `B to be assigned both partitions:\n${logsOf(stages)}`);
    await fleet.until(async () => (await b.counter('cuilink_stream_produced_total')) >= 5, 60_000, () => `B to produce:\n${logsOf(stages)}`);
    // Past A's session timeout (6 s) with a margin, whenever B got there.
    await waitFor(() => Date.now() - stoppedAt > 8000, 10_000, 'A stopped past its session timeout');
    a.kill('SIGCONT');
    sent.push(...(await fleet.publishNotes(t.input, 'fence-w3', 60)));

    // The zombie wakes: whatever it had in flight must not reach read_committed readers.
    await fleet.until(() => sent.every((id) => out.keys().has(id)), 150_000, () => `every note in the output:\n${logsOf(stages)}`);
    const aExit = await exitWithin(a, 30_000);
    ctx.diagnostic(`A after SIGCONT: ${aExit === 'running' ? 'still running' : `exited ${aExit}`}; fenced log line: ${a.logged('fenced by another instance with the same transactional id: stopping without committing what is not done')}`);
    b.kill('SIGTERM');
    assert.equal(await exitWithin(b, 30_000), 0, `B drains and exits 0:\n${logsOf(stages)}`);
    // Past the output's last committed transaction: nothing later can become visible.
    await new Promise((r) => setTimeout(r, 1500));
    const { lost, duplicated, unknown } = tally(out, sent);
    ctx.diagnostic(`${out.records.length} committed records for ${sent.length} notes; lost ${lost.length}, duplicated ${duplicated.length}`);
    assert.deepEqual(lost, [], `0 lost:\n${logsOf(stages, 40)}`);
    assert.deepEqual(duplicated, [], `0 duplicates:\n${logsOf(stages, 40)}`);
    assert.deepEqual(unknown, []);
    assert.equal(dead.records.length, 0, 'nothing dead-lettered');
    if (aExit === 'running') {
      // A zombie that lives on must at least be out of the way: no partition, nothing produced since.
      assert.deepEqual(assignedPartitions(a), [], `A holds no partition:\n${logsOf(stages)}`);
      a.kill('SIGKILL');
    } else {
      assert.ok(aExit !== 0, `A, fenced, exits non-zero (exit ${aExit}):\n${logsOf(stages)}`);
    }
    const offsets = await fleet.committed('fence-group', t.input);
    const ends = await (async () => {
      const admin = fleet.kafka.admin();
      try {
        return await admin.topicOffsets(t.input);
      } finally {
        await admin.close();
      }
    })();
    for (const { partition, offset } of offsets) assert.equal(offset, Number(ends[partition]!.high), `partition ${partition}: committed to its end`);
  } finally {
    await out.stop();
    await dead.stop();
  }
});

