import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BuildProgress } from '../../../src/retrieve/build-progress.ts';

function stream(isTTY: boolean) {
  const writes: string[] = [];
  return { writes, stream: { isTTY, write: (s: string) => (writes.push(s), true) } as unknown as NodeJS.WriteStream };
}

test('not a terminal: plain lines (no carriage return), at most one per interval, and the last one always', () => {
  const { writes, stream: s } = stream(false);
  const progress = new BuildProgress('encoding', 10, s, 60_000);
  for (let i = 0; i < 10; i++) progress.advance(1);
  progress.finish();
  // The first advance prints (nothing printed yet), then the interval holds until the last.
  assert.equal(writes.length, 2);
  for (const line of writes) {
    assert.ok(!line.includes('\r'));
    assert.ok(line.endsWith('\n'));
  }
  assert.match(writes[1]!, /^encoding \[#+\] 10\/10\b/);
});

test('a terminal: redrawn in place, a newline at the end', () => {
  const { writes, stream: s } = stream(true);
  const progress = new BuildProgress('encoding', 2, s);
  progress.advance(1);
  progress.advance(1);
  progress.finish();
  assert.ok(writes.slice(0, -1).every((w) => w.startsWith('\r')));
  assert.equal(writes.at(-1), '\n');
});

test('no rate and no ETA before a second has passed: a first batch done at once is no speed', () => {
  const { writes, stream: s } = stream(false);
  const progress = new BuildProgress('eval: linking mentions', 917, s, 60_000);
  progress.advance(267);
  assert.equal(writes[0], 'eval: linking mentions [#########.....................] 267/917\n');
});
