// `cuilink demo --follow` whose own broker dies (the OOM killer, a kill): nothing restarts that
// broker, so the demo must end with one line saying so, not retry it for ever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENV_VARS } from '../../src/stream/stage-config.ts';
import { buildPhenotypeIndex } from '../support/stream-fixtures.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

function javaChildOf(pid: number): number | undefined {
  const ps = spawnSync('ps', ['-eo', 'pid=,ppid=,comm='], { encoding: 'utf8' });
  const row = ps.stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find(([, parent, comm]) => Number(parent) === pid && comm === 'java');
  return row === undefined ? undefined : Number(row[0]);
}

test('demo --follow: its broker killed, the demo exits 3 within a minute with one line naming the dead broker', { timeout: 180_000 }, async () => {
  const work = mkdtempSync(join(tmpdir(), 'cuilink-demo-exit-'));
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name] of ENV_VARS) delete env[name];
  try {
    const index = await buildPhenotypeIndex(join(work, 'index'));
    const demo = spawn(process.execPath, ['bin/cuilink.js', 'demo', '--follow', '--index', index], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const killGroup = () => {
      try {
        process.kill(-demo.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    process.once('exit', killGroup);
    let stdout = '';
    let stderr = '';
    demo.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => demo.once('exit', (code, signal) => resolve({ code, signal })));
    try {
      await new Promise<void>((resolve, reject) => {
        demo.stdout!.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.includes('\nFollowing:')) resolve();
        });
        void exited.then(() => reject(new Error(`the demo exited before following\n${stdout}\n${stderr}`)));
      });
      const jvm = javaChildOf(demo.pid!);
      assert.ok(jvm !== undefined, 'the demo runs its broker JVM as its child');
      process.kill(jvm, 'SIGKILL');
      const outcome = await Promise.race([exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 60_000).unref())]);
      assert.deepEqual(outcome, { code: 3, signal: null }, `the demo ends on its own, exit 3\n${stderr.slice(-2000)}`);
      const last = stderr.trim().split('\n').at(-1) ?? '';
      assert.match(last, /^cuilink demo: the demo's Kafka broker on 127\.0\.0\.1:\d+ \(pid \d+\) exited unexpectedly \(signal SIGKILL; /, stderr.slice(-2000));
    } finally {
      killGroup();
      process.off('exit', killGroup);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
