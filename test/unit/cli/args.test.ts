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

test('flags that would be ignored or would crash later are one line and exit 2 before anything loads', () => {
  const cases: [string[], RegExp][] = [
    [['eval', '--index', 'no-index', '--corpus', 'no-corpus', '--split-seed', '7'], /--split-seed: only with --split tune\|learn/],
    [['eval', '--index', 'no-index', '--corpus', 'no-corpus', '--types', '('], /--types is not a valid regular expression/],
    [['memory', 'add', '--memory', '/nonexistent/m', '--corpus', 'no-corpus', '--types', '('], /--types is not a valid regular expression/],
    [['memory', 'add', '--memory', '/nonexistent/m', '--corpus', 'no-corpus', '--split-seed', '7'], /--split-seed: only with --split tune\|learn/],
    [['evaluator', '--index', 'no-index', '--brokers', '127.0.0.1:1', '--window-minutes', '0'], /--window-minutes must be > 0/],
    [['evaluator', '--index', 'no-index', '--brokers', '127.0.0.1:1', '--ttl-minutes', '0'], /--ttl-minutes must be > 0/],
    [['evaluator', '--index', 'no-index', '--brokers', '127.0.0.1:1', '--margin', '0.1'], /--margin: only with --baseline A/],
    [['evaluator', '--index', 'no-index', '--brokers', '127.0.0.1:1', '--split-seed', '7'], /--split-seed: only with --learn-fraction F/],
  ];
  for (const [args, message] of cases) {
    const result = spawnSync(process.execPath, ['bin/cuilink.js', ...args], { encoding: 'utf8' });
    const lines = result.stderr.trim().split('\n').filter((l) => !l.startsWith('npm warn'));
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.equal(lines.length, 1, `${args.join(' ')}: ${result.stderr}`);
    assert.match(lines[0]!, message, args.join(' '));
  }
});

test('a bad provider or precision from the environment names the variable, not a flag that was not given', () => {
  const run = (args: string[], env: Record<string, string>) => spawnSync(process.execPath, ['bin/cuilink.js', 'link', '--index', '/nonexistent/index', ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  for (const [variable, value, flag] of [['CUILINK_PRECISION', 'int4', 'precision'], ['CUILINK_PROVIDER', 'gpu', 'provider']] as const) {
    const fromEnv = run([], { [variable]: value });
    assert.equal(fromEnv.status, 2);
    assert.match(fromEnv.stderr.trim(), new RegExp(`^cuilink link: environment variable ${variable} must be one of [a-z0-9, ]+, got '${value}'$`));
    const fromFlag = run([`--${flag}`, value], {});
    assert.equal(fromFlag.status, 2);
    assert.match(fromFlag.stderr.trim(), new RegExp(`^cuilink link: --${flag} must be one of [a-z0-9, ]+, got '${value}'$`));
  }
});
