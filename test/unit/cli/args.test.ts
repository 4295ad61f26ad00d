import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { parseFlags } from '../../../src/cli/args.ts';

test('a flag that takes one value, given twice, is an error naming it; repeatable flags repeat', () => {
  const options = { corpus: { type: 'string' }, kb: { type: 'string', multiple: true }, json: { type: 'boolean' } } as const;
  assert.throws(() => parseFlags(['--corpus', 'a', '--corpus', 'b'], options), (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && /--corpus given more than once/.test(e.message));
  assert.throws(() => parseFlags(['--json', '--json'], options), /--json given more than once/);
  assert.deepEqual({ ...parseFlags(['--kb', 'x', '--kb', 'y', '--corpus', 'a'], options).values }, { kb: ['x', 'y'], corpus: 'a' });
  assert.throws(() => parseFlags(['--nope'], options), /Unknown option '--nope'/);
});

test('memory add --corpus A --corpus B is refused in one line instead of keeping only B', () => {
  const result = spawnSync(process.execPath, ['bin/cuilink.js', 'memory', 'add', '--memory', '/nonexistent/m', '--corpus', 'a.txt', '--corpus', 'b.txt'], { encoding: 'utf8' });
  assert.equal(result.status, 2);
  assert.match(result.stderr.trim(), /^cuilink memory add: --corpus given more than once \(it takes one value\)$/);
});
