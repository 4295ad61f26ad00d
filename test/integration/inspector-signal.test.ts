import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENV_VARS } from '../../src/stream/stage-config.ts';
import { buildPhenotypeIndex } from '../support/stream-fixtures.ts';

// Issue #27: Node opens a debugger on SIGUSR1, through which anything that reaches the port runs
// code in the process holding the notes. `cuilink run` (the deploy entrypoint, exactly as the
// images start it) must refuse it unless CUILINK_INSPECTOR=1. The broker here accepts connections
// and never answers, so the stage stays in its start-up (the broker and topic check, before the
// linker loads), alive, for as long as the test needs.

const DEBUGGER = /Debugger listening|Starting inspector/;
let root: string;
let indexDir: string;
let broker: Server;
const sockets = new Set<Socket>();

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-inspector-'));
  indexDir = await buildPhenotypeIndex(join(root, 'index'));
  broker = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => broker.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => broker.close(resolve));
  rmSync(root, { recursive: true, force: true });
});

interface Stage {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
}

function startStage(name: string, extraEnv: NodeJS.ProcessEnv): Stage {
  const config = join(root, `${name}.json`);
  writeFileSync(config, JSON.stringify({
    brokers: [`127.0.0.1:${(broker.address() as AddressInfo).port}`],
    groupId: name,
    http: { host: '127.0.0.1', port: 0 },
    linker: { indexDir, threads: 1, rerankerDir: false },
  }));
  const env: NodeJS.ProcessEnv = { ...process.env, CUILINK_LOG_LEVEL: 'info', ...extraEnv };
  for (const [variable] of ENV_VARS) if (!(variable in extraEnv) && variable !== 'CUILINK_LOG_LEVEL') delete env[variable];
  // Any inspector it opens takes a free port, not 9229.
  env.NODE_OPTIONS = [process.env.NODE_OPTIONS, '--inspect-port=0'].filter(Boolean).join(' ');
  const child = spawn(process.execPath, ['bin/cuilink.js', 'run', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const lines: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    let buffered = '';
    stream.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      lines.push(...parts);
    });
  }
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, lines, exited };
}

async function until(stage: Stage, pattern: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!stage.lines.some((l) => pattern.test(l))) {
    if (stage.child.exitCode !== null) throw new Error(`the stage exited (${stage.child.exitCode}) before logging ${pattern}:\n${stage.lines.slice(-20).join('\n')}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} within ${timeoutMs} ms:\n${stage.lines.slice(-20).join('\n')}`);
    await sleep(50);
  }
}

async function stop(stage: Stage): Promise<void> {
  if (stage.child.exitCode === null) stage.child.kill('SIGKILL');
  await stage.exited;
}

test('cuilink run refuses SIGUSR1: no debugger opens, one warning per signal, the stage goes on', async () => {
  const stage = startStage('inspector-off', {});
  try {
    await until(stage, /"message":"checking the brokers and topics"/, 120_000);
    stage.child.kill('SIGUSR1');
    await until(stage, /SIGUSR1 refused/, 10_000);
    stage.child.kill('SIGUSR1');
    await sleep(1000);
    assert.equal(stage.child.exitCode, null, 'still running');
    assert.deepEqual(stage.lines.filter((l) => DEBUGGER.test(l)), [], 'no inspector started');
    const refused = stage.lines.filter((l) => l.includes('SIGUSR1 refused'));
    assert.equal(refused.length, 2);
    const line = JSON.parse(refused[0]!) as { level: string; enableWith: string };
    assert.equal(line.level, 'warn');
    assert.equal(line.enableWith, 'CUILINK_INSPECTOR=1');
  } finally {
    await stop(stage);
  }
});

test('with CUILINK_INSPECTOR=1 an operator gets the inspector on SIGUSR1 (and the test above sees one when it opens)', async () => {
  const stage = startStage('inspector-on', { CUILINK_INSPECTOR: '1' });
  try {
    await until(stage, /"message":"checking the brokers and topics"/, 120_000);
    stage.child.kill('SIGUSR1');
    await until(stage, DEBUGGER, 10_000);
    assert.ok(!stage.lines.some((l) => l.includes('SIGUSR1 refused')));
  } finally {
    await stop(stage);
  }
});
