import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { MentionBatcher } from '../../../src/stream/mention-batcher.ts';

interface Item { id: string; mentions: number }
const item = (id: string, mentions: number): Item => ({ id, mentions });

/** A processor that records each batch and can be held open to observe in-flight state. */
function recorder() {
  const batches: string[][] = [];
  let release: (() => void) | undefined;
  let hold = false;
  return {
    batches,
    holdNext() { hold = true; },
    release() { hold = false; release?.(); release = undefined; },
    async process(items: Item[]) {
      batches.push(items.map((i) => i.id));
      if (hold) await new Promise<void>((r) => (release = r));
      return items.map((i) => `linked:${i.id}`);
    },
  };
}

test('cuts batches by mention count, keeping whole notes and submission order', async () => {
  const r = recorder();
  const batcher = new MentionBatcher<Item, string>({ maxMentions: 5, maxWaitMs: 1000, maxInFlightMentions: 100 }, (i) => i.mentions, (items) => r.process(items));
  const results = await Promise.all([item('a', 2), item('b', 2), item('c', 2), item('d', 3), item('e', 1)].map((i) => batcher.submit(i)));
  assert.deepEqual(results, ['linked:a', 'linked:b', 'linked:c', 'linked:d', 'linked:e']);
  // a+b = 4, c would make 6 > 5: cut; c+d = 5 full; e waits for the forced flush... or the size trigger.
  assert.deepEqual(r.batches.slice(0, 2), [['a', 'b'], ['c', 'd']]);
  await batcher.shutdown();
  assert.deepEqual(r.batches.flat(), ['a', 'b', 'c', 'd', 'e']);
});

test('a note heavier than maxMentions goes alone, never split', async () => {
  const r = recorder();
  const batcher = new MentionBatcher<Item, string>({ maxMentions: 3, maxWaitMs: 5, maxInFlightMentions: 100 }, (i) => i.mentions, (items) => r.process(items));
  await Promise.all([batcher.submit(item('big', 10)), batcher.submit(item('small', 1))]);
  assert.deepEqual(r.batches, [['big'], ['small']]);
  await batcher.shutdown();
});

test('the time limit flushes a partial batch', async () => {
  const r = recorder();
  const batcher = new MentionBatcher<Item, string>({ maxMentions: 1000, maxWaitMs: 20, maxInFlightMentions: 10_000 }, (i) => i.mentions, (items) => r.process(items));
  const started = performance.now();
  assert.equal(await batcher.submit(item('only', 1)), 'linked:only');
  assert.ok(performance.now() - started >= 15, 'waited for maxWaitMs before cutting a partial batch');
  assert.deepEqual(r.batches, [['only']]);
  await batcher.shutdown();
});

test('an idle linker links what is there on the next turn: records submitted together share a batch', async () => {
  const r = recorder();
  const batcher = new MentionBatcher<Item, string>({ maxMentions: 100, maxWaitMs: 0, maxInFlightMentions: 1000 }, (i) => i.mentions, (items) => r.process(items));
  const results = await Promise.all([item('a', 1), item('b', 2), item('c', 3)].map((i) => batcher.submit(i)));
  assert.deepEqual(results, ['linked:a', 'linked:b', 'linked:c']);
  assert.deepEqual(r.batches, [['a', 'b', 'c']], 'one partial batch, not one per note and not held for a full one');
  await batcher.shutdown();
});

test('while a batch is linked, arrivals queue behind it and go together as soon as it is done (no max-wait)', { timeout: 5000 }, async () => {
  const r = recorder();
  // A long maxWaitMs: only an idle linker may wait for it; one that just finished a batch must not.
  const batcher = new MentionBatcher<Item, string>({ maxMentions: 4, maxWaitMs: 60_000, maxInFlightMentions: 1000 }, (i) => i.mentions, (items) => r.process(items));
  r.holdNext();
  const first = batcher.submit(item('full', 4)); // a full batch starts at once
  await sleep(5);
  assert.deepEqual(r.batches, [['full']]);
  const later = [item('x', 1), item('y', 2), item('z', 3)].map((i) => batcher.submit(i));
  await sleep(5);
  assert.equal(r.batches.length, 1, 'nothing starts beside the running batch');
  r.release();
  assert.deepEqual(await Promise.all([first, ...later]), ['linked:full', 'linked:x', 'linked:y', 'linked:z']);
  // x+y fit in maxMentions 4, z does not: the backlog is cut into batches in order, back to back.
  assert.deepEqual(r.batches, [['full'], ['x', 'y'], ['z']]);
  await batcher.shutdown();
});

test('with two batch slots, a note arriving during a batch starts beside it; a third waits for the first slot to free', { timeout: 5000 }, async () => {
  const holds: (() => void)[] = [];
  const batches: string[][] = [];
  const batcher = new MentionBatcher<Item, string>({ maxMentions: 4, maxWaitMs: 60_000, maxInFlightMentions: 1000, maxConcurrentBatches: 2 }, (i) => i.mentions, async (items) => {
    batches.push(items.map((i) => i.id));
    await new Promise<void>((r) => holds.push(r));
    return items.map((i) => i.id);
  });
  const first = batcher.submit(item('a', 4)); // full: starts at once
  await sleep(5);
  const second = batcher.submit(item('b', 1)); // a free slot: starts on the next turn, no linger
  await sleep(5);
  assert.deepEqual(batches, [['a'], ['b']]);
  const third = [batcher.submit(item('c', 1)), batcher.submit(item('d', 1))];
  await sleep(5);
  assert.equal(batches.length, 2, 'both slots busy: c and d queue');
  holds.shift()!();
  assert.equal(await first, 'a');
  await sleep(5);
  assert.deepEqual(batches[2], ['c', 'd'], 'the freed slot takes the whole queue');
  for (const release of holds.splice(0)) release();
  await sleep(5);
  for (const release of holds.splice(0)) release();
  assert.deepEqual(await Promise.all([second, ...third]), ['b', 'c', 'd']);
  await batcher.shutdown();
});

test('signals pressure at the in-flight limit, releases waiters and relieves it at half', async () => {
  const r = recorder();
  const batcher = new MentionBatcher<Item, string>({ maxMentions: 4, maxWaitMs: 1, maxInFlightMentions: 4 }, (i) => i.mentions, (items) => r.process(items));
  const signals: boolean[] = [];
  batcher.onPressure((high) => signals.push(high));
  r.holdNext();
  const first = batcher.submit(item('a', 4));
  await sleep(5);
  assert.equal(batcher.inFlightMentions, 4);
  assert.deepEqual(signals, [true]);
  let waited = false;
  const capacity = batcher.whenBelowLimit().then(() => (waited = true));
  await sleep(5);
  assert.equal(waited, false, 'whenBelowLimit blocks while at the limit');
  r.release();
  await first;
  await capacity;
  assert.equal(waited, true);
  assert.deepEqual(signals, [true, false]);
  assert.equal(batcher.inFlightMentions, 0);
  await batcher.shutdown();
});

test('rejects (counted) beyond the queue bound and after shutdown; shutdown drains and is idempotent', async () => {
  const r = recorder();
  const batcher = new MentionBatcher<Item, string>({ maxMentions: 100, maxWaitMs: 10_000, maxInFlightMentions: 2, maxQueuedMentions: 3 }, (i) => i.mentions, (items) => r.process(items));
  const queued = [batcher.submit(item('a', 2)), batcher.submit(item('b', 1))];
  await assert.rejects(batcher.submit(item('c', 1)), { code: 'BATCHER_FULL' });
  const [s1, s2] = [batcher.shutdown(), batcher.shutdown()];
  assert.equal(s1, s2, 'the same drain promise');
  await s1;
  assert.deepEqual(await Promise.all(queued), ['linked:a', 'linked:b'], 'queued items were processed by the drain');
  await assert.rejects(batcher.submit(item('d', 1)), { code: 'BATCHER_CLOSED' });
  assert.equal(batcher.stats.rejected, 2);
  assert.equal(batcher.stats.submitted, 2);
});

test('a failing batch rejects exactly its own items and later batches still run', async () => {
  let calls = 0;
  const batcher = new MentionBatcher<Item, string>({ maxMentions: 2, maxWaitMs: 1, maxInFlightMentions: 100 }, (i) => i.mentions, async (items) => {
    calls++;
    if (calls === 1) throw new Error('encoder crashed');
    return items.map((i) => i.id);
  });
  const a = batcher.submit(item('a', 2));
  const b = batcher.submit(item('b', 2));
  await assert.rejects(a, /encoder crashed/);
  assert.equal(await b, 'b');
  assert.equal(batcher.stats.failedBatches, 1);
  await batcher.shutdown();
});

test('a batch that fills while an idle linker waits out maxWaitMs starts at once, not when the wait ends', { timeout: 5000 }, async () => {
  const r = recorder();
  const batcher = new MentionBatcher<Item, string>({ maxMentions: 4, maxWaitMs: 60_000, maxInFlightMentions: 1000 }, (i) => i.mentions, (items) => r.process(items));
  const first = batcher.submit(item('a', 1)); // partial: the idle linker waits up to maxWaitMs for more
  await sleep(5);
  assert.deepEqual(r.batches, []);
  const second = batcher.submit(item('b', 3)); // now full
  await sleep(5);
  assert.deepEqual(r.batches, [['a', 'b']], 'a full batch does not wait for the partial one’s timer');
  assert.deepEqual(await Promise.all([first, second]), ['linked:a', 'linked:b']);
  await batcher.shutdown();
});
