import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeadLetterBreaker, deadLetterBreakerOf, type RecordOutcome } from '../../../src/stream/dead-letter-breaker.ts';
import { loadStageConfig } from '../../../src/stream/stage-config.ts';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { StageMetrics } from '../../../src/telemetry/stage-metrics.ts';

function feed(breaker: DeadLetterBreaker, pattern: string): void {
  for (const c of pattern) breaker.record(c === 'x' ? 'dead' : 'ok');
}

test('opens when more than maxShare of the last N records were dead-lettered, and says so once', () => {
  const breaker = new DeadLetterBreaker({ windowRecords: 10, maxShare: 0.5 });
  const changes: [boolean, number][] = [];
  breaker.onChange((open, state) => changes.push([open, state.dead]));
  feed(breaker, 'x.x.x.x.x.'); // 5 of 10: not more than half
  assert.equal(breaker.open, false);
  feed(breaker, 'x'); // window x.x.x.x.x → .x.x.x.x.x : still 5 of 10
  assert.equal(breaker.open, false);
  feed(breaker, 'x'); // 6 of 10
  assert.equal(breaker.open, true);
  feed(breaker, 'xxx');
  assert.deepEqual(changes, [[true, 6]]);
  assert.deepEqual(breaker.state, { open: true, records: 10, dead: 7, share: 0.7 }); // .x.x.xxxxx
});

test('closes only once the share in the window falls under maxShare', () => {
  const breaker = new DeadLetterBreaker({ windowRecords: 10, maxShare: 0.5 });
  const changes: boolean[] = [];
  breaker.onChange((open) => changes.push(open));
  feed(breaker, 'xxxxxxxxxx');
  assert.equal(breaker.open, true);
  feed(breaker, '.....'); // 5 of 10: at the threshold, not under it
  assert.equal(breaker.open, true);
  feed(breaker, '.'); // 4 of 10
  assert.equal(breaker.open, false);
  feed(breaker, '.x'); // 4 of 10 again (an old x left the window)
  assert.equal(breaker.open, false);
  assert.deepEqual(changes, [true, false]);
});

test('before the window is full: a share counts from minRecords; dead letters alone above maxShare × N open it at once', () => {
  const early = new DeadLetterBreaker({ windowRecords: 200, maxShare: 0.5, minRecords: 20 });
  feed(early, 'xxxxxxxxxx'); // 10 of 10, but fewer than minRecords
  assert.equal(early.open, false);
  feed(early, '.........x'); // 11 of 20
  assert.equal(early.open, true);

  const full = new DeadLetterBreaker({ windowRecords: 200, maxShare: 0.5 }); // minRecords = 200
  feed(full, 'x'.repeat(100));
  assert.equal(full.open, false, '100 of 200 is not more than half');
  feed(full, 'x');
  assert.equal(full.open, true, '101 dead: more than half of any 200 that hold them');

  const healthy = new DeadLetterBreaker({ windowRecords: 200, maxShare: 0.5 });
  feed(healthy, 'x..'.repeat(1000));
  assert.equal(healthy.open, false);
});

test('reset() (an operator) closes it and empties the window', () => {
  const breaker = new DeadLetterBreaker({ windowRecords: 4, maxShare: 0.25 });
  const changes: boolean[] = [];
  const remove = breaker.onChange((open) => changes.push(open));
  feed(breaker, 'xx..');
  assert.equal(breaker.open, true);
  breaker.reset();
  assert.equal(breaker.open, false);
  assert.deepEqual(breaker.state, { open: false, records: 0, dead: 0, share: 0 });
  feed(breaker, 'x...');
  assert.equal(breaker.open, false, 'one of four is not more than a quarter');
  remove();
  feed(breaker, 'xx');
  assert.equal(breaker.open, true);
  assert.deepEqual(changes, [true, false], 'a removed listener hears nothing more');
  breaker.reset();
  breaker.reset();
});

test('maxShare 0: any dead letter opens it, and only reset() closes it', () => {
  const breaker = new DeadLetterBreaker({ windowRecords: 3, maxShare: 0 });
  feed(breaker, '..x');
  assert.equal(breaker.open, true);
  feed(breaker, '......');
  assert.equal(breaker.open, true);
  breaker.reset();
  assert.equal(breaker.open, false);
});

test('bad options are refused', () => {
  const make = (o: Partial<{ windowRecords: number; maxShare: number; minRecords: number }>) => () => new DeadLetterBreaker({ windowRecords: 10, maxShare: 0.5, ...o });
  assert.throws(make({ windowRecords: 0 }), RangeError);
  assert.throws(make({ windowRecords: 1.5 }), RangeError);
  assert.throws(make({ maxShare: 1 }), RangeError);
  assert.throws(make({ maxShare: -0.1 }), RangeError);
  assert.throws(make({ maxShare: Number.NaN }), RangeError);
  assert.throws(make({ minRecords: 11 }), RangeError);
  assert.throws(make({ minRecords: 0 }), RangeError);
});

test('stage config: on by default (200 records, half), from the file or CUILINK_DEAD_LETTER_BREAKER*; off gives no breaker', () => {
  const defaults = loadStageConfig({ env: {} });
  assert.deepEqual(defaults.deadLetterBreaker, { enabled: true, windowRecords: 200, maxShare: 0.5 });
  const breaker = deadLetterBreakerOf(defaults.deadLetterBreaker)!;
  assert.deepEqual([breaker.windowRecords, breaker.maxShare, breaker.minRecords], [200, 0.5, 200]);
  const env = loadStageConfig({ env: { CUILINK_DEAD_LETTER_BREAKER_WINDOW: '50', CUILINK_DEAD_LETTER_BREAKER_MAX_SHARE: '0.2' } });
  assert.deepEqual(env.deadLetterBreaker, { enabled: true, windowRecords: 50, maxShare: 0.2 });
  const off = loadStageConfig({ env: { CUILINK_DEAD_LETTER_BREAKER: 'false' } });
  assert.equal(deadLetterBreakerOf(off.deadLetterBreaker), undefined);
  assert.throws(() => loadStageConfig({ env: { CUILINK_DEAD_LETTER_BREAKER_MAX_SHARE: '1' } }), /CUILINK_DEAD_LETTER_BREAKER_MAX_SHARE.*deadLetterBreaker\.maxShare/);
  assert.throws(() => loadStageConfig({ overrides: { 'deadLetterBreaker.minRecords': 500 }, env: {} }), /deadLetterBreaker\.minRecords.*must not exceed windowRecords/);
  assert.equal(loadStageConfig({ overrides: { 'deadLetterBreaker.minRecords': 20 }, env: {} }).deadLetterBreaker.minRecords, 20);
});

test('O(1) per record over a long stream', () => {
  const breaker = new DeadLetterBreaker({ windowRecords: 1000, maxShare: 0.5 });
  const outcomes: RecordOutcome[] = ['ok', 'ok', 'dead'];
  const started = performance.now();
  for (let i = 0; i < 1_000_000; i++) breaker.record(outcomes[i % 3]!);
  assert.equal(breaker.open, false);
  assert.ok(performance.now() - started < 2000);
});

test('metrics: cuilink_stream_dead_letter_breaker_open is 0 from start and 1 while open; each opening counts a trip', async () => {
  const exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  const provider = new MeterProvider({ readers: [exporter] });
  const text = async () => new PrometheusSerializer(undefined, false, undefined, false, true).serialize((await exporter.collect()).resourceMetrics);
  const value = (metrics: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
  try {
    const metrics = new StageMetrics(() => 0, provider.getMeter('cuilink.stream'));
    const breaker = new DeadLetterBreaker({ windowRecords: 4, maxShare: 0.5 });
    breaker.onChange((open) => metrics.recordDeadLetterBreaker(open)); // the stage's wiring
    let now = await text();
    assert.equal(value(now, 'cuilink_stream_dead_letter_breaker_open'), 0);
    assert.equal(value(now, 'cuilink_stream_dead_letter_breaker_trips_total'), 0);
    feed(breaker, 'xxx');
    now = await text();
    assert.equal(value(now, 'cuilink_stream_dead_letter_breaker_open'), 1);
    assert.equal(value(now, 'cuilink_stream_dead_letter_breaker_trips_total'), 1);
    breaker.reset();
    feed(breaker, 'xxx');
    breaker.reset();
    now = await text();
    assert.equal(value(now, 'cuilink_stream_dead_letter_breaker_open'), 0);
    assert.equal(value(now, 'cuilink_stream_dead_letter_breaker_trips_total'), 2);
    assert.equal(metrics.counts.deadLetterBreakerTrips, 2);
  } finally {
    await provider.shutdown();
  }
});

test('recordOnce counts each partition’s offset once: a record read again is skipped, other partitions and a reset window count anew', () => {
  const breaker = new DeadLetterBreaker({ windowRecords: 10, maxShare: 0.5 });
  const at = (partition: number, offset: number) => ({ topic: 'in', partition, offset: String(offset) });
  for (const offset of [0, 1, 0, 1, 2]) breaker.recordOnce(at(0, offset), 'dead');
  breaker.recordOnce(at(1, 0), 'ok');
  assert.deepEqual([breaker.state.records, breaker.state.dead], [4, 3], 'offsets 0–2 of partition 0 once each, and offset 0 of partition 1');
  breaker.reset();
  breaker.recordOnce(at(0, 2), 'ok');
  assert.equal(breaker.state.records, 1, 'a reset window counts what it is given again');
});
