// `cuilink run` is the service only: with no brokers it must fail at once (a pod whose
// CUILINK_BROKERS was lost must not start a local broker and look healthy). The demo is `cuilink demo`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ENV_VARS } from '../../../src/stream/stage-config.ts';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

test('cuilink run without brokers: exit 2, one line naming CUILINK_BROKERS and cuilink demo, nothing started', () => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name] of ENV_VARS) delete env[name];
  const run = spawnSync(process.execPath, ['bin/cuilink.js', 'run'], { cwd: REPO, env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 2, `exit code 2 (stderr: ${run.stderr})`);
  assert.equal(run.stdout, '');
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one line: ${run.stderr}`);
  assert.match(lines[0]!, /^cuilink run: no brokers configured: set CUILINK_BROKERS .*'cuilink demo'/);
});

test('cuilink run takes --memory and --calibration (what the memory updater and docs tell operators to pass)', () => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name] of ENV_VARS) delete env[name];
  const run = spawnSync(process.execPath, ['bin/cuilink.js', 'run', '--memory', 'memory-root', '--calibration', 'none'], { cwd: REPO, env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 2);
  assert.doesNotMatch(run.stderr, /Unknown option/i, run.stderr);
  assert.match(run.stderr, /no brokers configured/, 'the flags parse; it stops at the missing brokers');
});

test('cuilink demo is listed in the top-level help next to run', () => {
  const help = spawnSync(process.execPath, ['bin/cuilink.js', '--help'], { cwd: REPO, encoding: 'utf8' });
  assert.match(help.stdout, /^ {2}run +Run the Kafka linking stage/m);
  assert.match(help.stdout, /^ {2}demo +Local demo/m);
});
