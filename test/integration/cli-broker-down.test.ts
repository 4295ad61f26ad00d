// Every command that takes --brokers, against a broker that is not there: exit 3 and one line on
// stderr naming the broker and the cause; no JSON from the Kafka client, no stack trace, nothing
// on stdout (#28: an unreachable broker printed ten stack traces before the one-line exit).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENV_VARS } from '../../src/stream/stage-config.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const CORPUS = join(REPO, 'test', 'fixtures', 'eval', 'sample.PubTator');
const INDEX = join(REPO, 'test', 'fixtures', 'eval', 'index');

/** A loopback port nothing listens on: bound, then closed, so the connection is refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function cuilink(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name] of ENV_VARS) delete env[name];
  delete env.CUILINK_BROKERS;
  const child = spawn(process.execPath, [join(REPO, 'bin', 'cuilink.js'), ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => child.once('close', (code) => (clearTimeout(timer), resolve({ code, stdout, stderr }))));
}

test('a broker that is down: every Kafka command exits 3 with one line naming the broker and the cause', { timeout: 10 * 60_000 }, async () => {
  const port = await closedPort();
  const broker = `127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-broker-down-'));
  try {
    const commands: { name: string; args: string[]; startLines?: RegExp }[] = [
      { name: 'gold-sample', args: ['gold-sample', '--corpus', CORPUS, '--fraction', '0.5'] },
      { name: 'evaluator', args: ['evaluator', '--index', INDEX, '--state', join(dir, 'evaluator-state.json')] },
      // The updater says its learn/measure split and the model it loaded before it reaches for the brokers.
      { name: 'memory updater', args: ['memory', 'updater', '--memory', join(dir, 'memory'), '--learn-fraction', '0.5', '--threads', '1'], startLines: /^(memory-updater: learn\/measure split|cuilink: bi-encoder )/ },
      { name: 'topics describe', args: ['topics', 'describe'] },
      { name: 'topics create', args: ['topics', 'create'] },
      { name: 'topics read', args: ['topics', 'read'] },
      { name: 'dlq inspect', args: ['dlq', 'inspect'] },
      { name: 'dlq replay', args: ['dlq', 'replay'] },
    ];
    for (const command of commands) {
      const run = await cuilink([...command.args, '--brokers', broker], dir);
      const shown = `\n--- stdout ---\n${run.stdout}\n--- stderr ---\n${run.stderr}`;
      assert.equal(run.code, 3, `${command.name}: exit code 3${shown}`);
      assert.equal(run.stdout, '', `${command.name}: nothing on stdout${shown}`);
      const lines = run.stderr.split('\n').filter((l) => l.length > 0);
      assert.ok(!lines.some((l) => l.trimStart().startsWith('{')), `${command.name}: no JSON lines from the client${shown}`);
      assert.ok(!lines.some((l) => /^\s+at /.test(l)), `${command.name}: no stack trace${shown}`);
      const before = lines.slice(0, -1);
      if (command.startLines === undefined) assert.deepEqual(before, [], `${command.name}: exactly one line on stderr${shown}`);
      else for (const line of before) assert.match(line, command.startLines, `${command.name}: only its start-up lines before the error${shown}`);
      const last = lines.at(-1) ?? '';
      assert.ok(last.startsWith(`cuilink ${command.name}: `), `${command.name}: the line names the command: '${last}'`);
      assert.ok(last.includes(broker), `${command.name}: the line names the broker ${broker}: '${last}'`);
      assert.match(last, /ECONNREFUSED/, `${command.name}: the line gives the cause: '${last}'`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
