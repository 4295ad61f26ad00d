import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPhenotypeIndex } from '../support/stream-fixtures.ts';
import { StageProcess } from '../support/stage-process.ts';

// `cuilink run` told to stop while it is still starting: a pod rescheduled while it waits on a
// broker that does not answer. It must stop then, not once its start-up has run its course (tens of
// seconds against a silent broker), past the pod's grace period, and it must not go on to load its
// linker, join the group and take records. The broker and topics are checked before the linker
// loads; a signal during the load is test/integration/stream-process.test.ts's (a broker that answers).
let root: string;
let indexDir: string;
/** A broker that accepts connections and never answers (a partition, a hung broker): start-up waits on it. */
let silent: Server;
const sockets = new Set<Socket>();
const running: StageProcess[] = [];

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-run-signal-'));
  indexDir = await buildPhenotypeIndex(join(root, 'index'));
  silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  for (const p of running) if (p.child.exitCode === null) p.kill('SIGKILL');
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
  rmSync(root, { recursive: true, force: true });
});

function startStage(name: string): StageProcess {
  const { port } = silent.address() as { port: number };
  const p = new StageProcess(root, name, { brokers: [`127.0.0.1:${port}`], groupId: `${name}-group`, http: { host: '127.0.0.1', port: 0 }, linker: { indexDir, threads: 1 } });
  running.push(p);
  return p;
}

/** Exit code, and seconds from now until the process exited (null: still running after `limitMs`, then killed). */
async function exitWithin(p: StageProcess, limitMs: number): Promise<{ code: number | null; seconds: number | null }> {
  const started = Date.now();
  const timer = setTimeout(() => p.kill('SIGKILL'), limitMs);
  const code = await p.exited;
  clearTimeout(timer);
  const elapsed = Date.now() - started;
  return elapsed >= limitMs ? { code, seconds: null } : { code, seconds: elapsed / 1000 };
}

test('SIGTERM while it waits on a broker that does not answer: exits 0 within seconds, naming the signal, without loading its linker or consuming', { timeout: 120_000 }, async () => {
  const stage = startStage('early-broker');
  await stage.untilLogged('checking the brokers and topics', 60_000);
  stage.kill('SIGTERM');
  // The broker's request timeout (30 s) would end a start-up that ignored the signal: 10 s is well under it.
  const { code, seconds } = await exitWithin(stage, 10_000);
  const shown = `\n${stage.lines.slice(-6).join('\n')}`;
  assert.notEqual(seconds, null, `still running 10 s after SIGTERM${shown}`);
  assert.equal(code, 0, `exit 0 on a signal during start-up${shown}`);
  const exiting = stage.lines.find((l) => l.includes('"message":"exiting"'));
  assert.ok(exiting?.includes('"reason":"SIGTERM"'), `the exit line names the signal: ${exiting}${shown}`);
  assert.ok(!stage.logged('http listening') && !stage.logged('linker loaded'), `the linker is not loaded before the broker answers${shown}`);
  assert.ok(!stage.logged('stage started') && !stage.logged('joined consumer group'), `nothing consumed${shown}`);
});
