import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LinkedNote, LinkingCore, NoteInput } from '../../../src/link/types.ts';
import type { DeadLetterBreaker } from '../../../src/stream/dead-letter-breaker.ts';
import type { KafkaConsumerClient } from '../../../src/stream/kafka/client-types.ts';
import { inputOnPressure, LinkingStage } from '../../../src/stream/linking-stage.ts';
import type { MentionBatcher } from '../../../src/stream/mention-batcher.ts';
import type { NoteOutcome, QueuedNote } from '../../../src/stream/note-batch-linker.ts';
import { loadStageConfig } from '../../../src/stream/stage-config.ts';
import type { StageCodec } from '../../../src/stream/stage-codec.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';

// Issue #27 item 4 (fixed in fbcf5a7): the batcher's backpressure listener must not resume the
// input topic once a drain (stop()) or an open dead-letter breaker has paused it for good.

test('inputOnPressure: pause at the limit, resume at half, and leave the input alone while stopping or with the breaker open', () => {
  assert.equal(inputOnPressure(true, { stopping: false, breakerOpen: false }), 'pause');
  assert.equal(inputOnPressure(false, { stopping: false, breakerOpen: false }), 'resume');
  for (const high of [true, false]) {
    assert.equal(inputOnPressure(high, { stopping: true, breakerOpen: false }), 'leave', `stopping, high=${high}`);
    assert.equal(inputOnPressure(high, { stopping: false, breakerOpen: true }), 'leave', `breaker open, high=${high}`);
    assert.equal(inputOnPressure(high, { stopping: true, breakerOpen: true }), 'leave');
  }
});

/** A linker whose linkNotes waits for `release()`: in-flight mentions stay high until then. */
function gatedLinker(): LinkingCore & { release: () => void } {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  return {
    versions: { linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i' },
    async linkNotes(notes: NoteInput[]): Promise<LinkedNote[]> {
      await gate;
      return notes.map((n) => ({ noteId: n.noteId, mentions: [], linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 1 }));
    },
    async probe() {},
    async close() {},
    release: () => open(),
  };
}

const codec = {} as StageCodec;

/** The stage, not started (no broker is reached), with its consumer's pause/resume counted and close a no-op. */
function stageOf(overrides: Record<string, unknown> = {}) {
  const config = loadStageConfig({ env: {}, overrides: { brokers: ['127.0.0.1:1'], 'batching.maxInFlightMentions': 4, 'batching.maxMentions': 16, ...overrides } });
  const linker = gatedLinker();
  const stage = new LinkingStage({ config, linker, codec, logger: createLogger({ level: 'error', sink: () => {} }) });
  const internals = stage as unknown as { consumer: KafkaConsumerClient; batcher: MentionBatcher<QueuedNote, NoteOutcome>; breaker: DeadLetterBreaker | undefined; delivery: { disconnect(): Promise<void> } };
  const calls: string[] = [];
  internals.consumer.pause = () => void calls.push('pause');
  internals.consumer.resume = () => void calls.push('resume');
  internals.consumer.close = async () => {};
  internals.delivery.disconnect = async () => {};
  return { stage, linker, calls, batcher: internals.batcher, internals };
}

const heavyNote = (id: string): QueuedNote => ({ note: { noteId: id, text: 'fever', mentions: [{ id: 'm', start: 0, end: 5, text: 'fever', label: 'Phenotype' }] }, mentionCount: 4 });

test('pressure falling after stop() does not resume the input', async () => {
  const { stage, linker, calls, batcher } = stageOf();
  const linked = batcher.submit(heavyNote('a'));
  assert.deepEqual(calls, ['pause'], 'in-flight mentions at the limit pause the input');
  await stage.stop();
  linker.release();
  await linked;
  assert.equal(batcher.inFlightMentions, 0, 'pressure fell');
  assert.ok(!calls.includes('resume'), `the drain keeps the input paused, got ${calls.join(', ')}`);
});

test('without a drain, pressure falling does resume the input (the listener works)', async () => {
  const { linker, calls, batcher } = stageOf();
  const linked = batcher.submit(heavyNote('a'));
  linker.release();
  await linked;
  assert.deepEqual(calls, ['pause', 'resume']);
});

test('pressure falling while the dead-letter breaker is open does not resume the input', async () => {
  const { linker, calls, batcher, internals } = stageOf({ 'deadLetterBreaker.windowRecords': 4, 'deadLetterBreaker.maxShare': 0.5 });
  const linked = batcher.submit(heavyNote('a'));
  const breaker = internals.breaker;
  assert.ok(breaker !== undefined, 'the stage has a dead-letter breaker');
  for (let i = 0; i < 4; i++) breaker.record('dead');
  assert.equal(breaker.open, true);
  linker.release();
  await linked;
  assert.equal(batcher.inFlightMentions, 0, 'pressure fell');
  assert.ok(!calls.includes('resume'), `the open breaker keeps the input paused, got ${calls.join(', ')}`);
});

test('the dead-letter breaker closing (other partitions\' records bring the share down) resumes the input, unless pressure is high or the stage is draining', async () => {
  const breakerOverrides = { 'deadLetterBreaker.windowRecords': 4, 'deadLetterBreaker.maxShare': 0.5 };
  const trip = (breaker: DeadLetterBreaker) => {
    for (let i = 0; i < 4; i++) breaker.record('dead');
    assert.equal(breaker.open, true);
  };
  const close = (breaker: DeadLetterBreaker) => {
    for (let i = 0; i < 3; i++) breaker.record('ok'); // 1 of 4 dead
    assert.equal(breaker.open, false);
  };

  const idle = stageOf(breakerOverrides);
  trip(idle.internals.breaker!);
  assert.deepEqual(idle.calls, ['pause']);
  close(idle.internals.breaker!);
  assert.deepEqual(idle.calls, ['pause', 'resume'], 'closed with nothing in flight: the input is read again');

  const busy = stageOf(breakerOverrides);
  const linked = busy.batcher.submit(heavyNote('a'));
  assert.deepEqual(busy.calls, ['pause'], 'in-flight mentions at the limit');
  trip(busy.internals.breaker!);
  close(busy.internals.breaker!);
  assert.ok(!busy.calls.includes('resume'), `high pressure keeps the input paused, got ${busy.calls.join(', ')}`);
  busy.linker.release();
  await linked;
  assert.equal(busy.calls.at(-1), 'resume', 'pressure falling resumes it once the breaker is closed');

  const draining = stageOf(breakerOverrides);
  trip(draining.internals.breaker!);
  await draining.stage.stop();
  close(draining.internals.breaker!);
  assert.ok(!draining.calls.includes('resume'), `a drain keeps the input paused, got ${draining.calls.join(', ')}`);
});

test('a session timeout longer than the Kafka client\'s default rebalance timeout (102 s) still makes a consumer', async () => {
  const config = loadStageConfig({ env: {}, overrides: { brokers: ['127.0.0.1:1'], 'consumer.sessionTimeoutMs': 300_000 } });
  const stage = new LinkingStage({ config, linker: gatedLinker(), codec, logger: createLogger({ level: 'error', sink: () => {} }) });
  // The library consumer is made when the stage runs; made here, it checks its options without a broker.
  const { create } = (stage as unknown as { consumer: { create: () => { close(force: boolean): Promise<void> } } }).consumer;
  const library = create();
  await library.close(true);
});

test('a listener added after the stage failed hears of the failure (the demo subscribes once its samples are linked)', async () => {
  const { stage } = stageOf();
  const cause = new Error('linker died');
  (stage as unknown as { fail(what: string, error: unknown): void }).fail('linker failed', cause);
  const heard = await new Promise<unknown>((resolve) => stage.onFatal(resolve));
  assert.equal(heard, cause);
  assert.equal(stage.live, false);
});
