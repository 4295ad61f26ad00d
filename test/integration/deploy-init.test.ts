import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { deployLint, installOrSkip, kustomize, run, tini } from '../support/deploy-tools.ts';

// PID 1 of a container gets no default signal actions: the kernel drops a SIGTERM it has no
// handler for. Node installs none until a command listens (`run` after its config is read, the
// evaluator and the memory updater only once started, `index build` never), and a shell installs
// none either, so a pod stopped during a model load, a KB load or an index build sat out its whole
// grace period and was SIGKILLed. tini as PID 1 forwards the signal to a child that is not PID 1
// (default actions apply: exit 143) and reaps orphaned processes. No Docker engine or cluster runs
// here, so this reads the Dockerfiles, the rendered manifests and the compose file.

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const DOCKERFILES = ['deploy/docker/Dockerfile', 'deploy/docker/Dockerfile.cuda'];
const TINI = '/usr/local/bin/tini';
let scratch: string;

before(() => {
  scratch = mkdtempSync(join(tmpdir(), 'cuilink-init-'));
});
after(() => rmSync(scratch, { recursive: true, force: true }));

/** Each stage's instructions, continuation lines joined, keyed by stage name (`AS name`). */
function stagesOf(file: string): Map<string, string> {
  const text = readFileSync(file, 'utf8').replace(/\\\n/g, ' ');
  const stages = new Map<string, string>();
  for (const part of text.split(/\n(?=FROM )/).slice(1)) stages.set(/^FROM \S+(?: AS (\S+))?/i.exec(part)?.[1] ?? '(unnamed)', part);
  return stages;
}

/** What a shell or a program run as `command` is: a shell does not pass a signal on to the process it waits for. */
const isShell = (program: string) => /(^|\/)(sh|bash|dash|ash)$/.test(program);

/** An init in front of `command`, and one that signals a shell's children too (-g: the whole process group). */
function assertInitFirst(command: string[], where: string): void {
  assert.equal(command[0], 'tini', `${where}: PID 1 is ${command[0]}, not tini: ${JSON.stringify(command)}`);
  const child = command.slice(command.indexOf('--') + 1);
  assert.ok(command.includes('--') && child.length > 0, `${where}: tini -- PROGRAM`);
  if (isShell(child[0]!)) assert.ok(command.slice(0, command.indexOf('--')).includes('-g'), `${where}: a shell under tini needs -g, or node under the shell never gets the signal`);
}

test('both images run tini as PID 1, the distribution\'s static build copied from a dependency stage', () => {
  for (const file of DOCKERFILES) {
    const stages = stagesOf(file);
    const runtime = stages.get('runtime');
    assert.ok(runtime, `${file}: a runtime stage`);
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(runtime)?.[1] ?? '[]') as string[];
    assertInitFirst(entrypoint, file);
    assert.deepEqual(entrypoint.slice(entrypoint.indexOf('--') + 1), ['node', 'bin/cuilink.js'], `${file}: tini runs the checkout's command line`);
    // Static: the runtime base need not be the distribution tini came from (Dockerfile.cuda runs on Ubuntu).
    const copy = new RegExp(`^COPY --from=(\\S+) (?:--\\S+ )*/usr/bin/tini-static ${TINI}$`, 'm').exec(runtime);
    assert.ok(copy, `${file}: the runtime stage copies /usr/bin/tini-static to ${TINI}`);
    assert.match(stages.get(copy[1]!) ?? '', /apt-get install [^&]*\btini\b/, `${file}: stage ${copy[1]} installs Debian's tini`);
  }
});

test('every container of the cuilink image in the rendered manifests starts with tini: the image\'s ENTRYPOINT, or a command that names it', async (t) => {
  const [renderer, linter] = await Promise.all([installOrSkip(kustomize), installOrSkip(deployLint)]);
  const skip = renderer.skip ?? linter.skip;
  if (skip) return t.skip(skip);
  const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(stagesOf(DOCKERFILES[0]!).get('runtime')!)![1]!) as string[];
  for (const overlay of ['cpu', 'gpu']) {
    const file = join(scratch, `${overlay}.yaml`);
    writeFileSync(file, await renderer.tool!(`deploy/k8s/overlays/${overlay}`));
    const docs = JSON.parse((await run(linter.tool!, ['yaml', file])).stdout) as Json[];
    const pods = docs.filter((d) => ['Deployment', 'StatefulSet', 'Job'].includes(d.kind));
    assert.ok(pods.some((d) => d.kind === 'Job'), `${overlay}: the index-build Job is checked`);
    for (const pod of pods) {
      for (const c of pod.spec.template.spec.containers as Json[]) {
        // `command` replaces the image's ENTRYPOINT; `args` alone keeps it.
        assertInitFirst((c.command as string[] | undefined) ?? entrypoint, `${overlay} ${pod.kind}/${pod.metadata.name}`);
      }
    }
  }
});

test('every compose service of the cuilink image starts with the image\'s tini and adds no second init', async (t) => {
  const { tool, skip } = await installOrSkip(deployLint);
  if (skip) return t.skip(skip);
  const result = await run(tool!, ['compose', 'deploy/compose/compose.yaml']);
  assert.equal(result.code, 0, result.stderr);
  const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(stagesOf(DOCKERFILES[0]!).get('runtime')!)![1]!) as string[];
  const services = Object.entries((JSON.parse(result.stdout) as Json).services as Record<string, Json>).filter(([, s]) => s.build?.dockerfile === 'deploy/docker/Dockerfile');
  assert.ok(services.length >= 4, 'the cuilink services are found');
  for (const [name, service] of services) {
    assertInitFirst((service.entrypoint as string[] | null | undefined) ?? entrypoint, `compose ${name}`);
    // Docker's own init would be PID 1 and tini its child, warning that it cannot reap.
    assert.notEqual(service.init, true, `compose ${name}: init: true puts a second init in front of tini`);
  }
});

/** The pid of `parent`'s child: the namespace's PID 1 when `parent` is `unshare --fork`. */
function childOf(parent: number): number | undefined {
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      // Field 4 of /proc/PID/stat, after the command name in parentheses (which may hold spaces).
      const ppid = Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      if (ppid === parent) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/**
 * Runs `argv` as PID 1 of a new PID namespace, as a container runtime does, and once `started`
 * shows on its stderr (a start-up that takes long and listens for no signal yet), sends SIGTERM to
 * that PID 1 from outside, as the kubelet does. Returns the exit status, or 'hung' when it was
 * still running long after (a hang guard; it is killed then).
 */
async function stopDuringStartup(argv: string[], started: RegExp, env: NodeJS.ProcessEnv): Promise<{ status: number | string; output: string }> {
  const child = spawn('unshare', ['--user', '--map-root-user', '--pid', '--fork', ...argv], { cwd: process.cwd(), env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | string>((done) => child.once('exit', (code, signal) => done(code ?? signal ?? 'unknown')));
  let pid1: number | undefined;
  try {
    for (let waited = 0; !started.test(output); waited += 200) {
      if (waited > 120_000 || child.exitCode !== null) return { status: `never started: ${child.exitCode ?? 'still running'}`, output };
      await sleep(200);
    }
    pid1 = childOf(child.pid!);
    assert.ok(pid1, 'the namespace has its PID 1');
    process.kill(pid1, 'SIGTERM');
    const status = await Promise.race([exited, sleep(60_000, 'hung', { ref: false })]);
    return { status, output };
  } finally {
    if (child.exitCode === null) {
      if (pid1 !== undefined) process.kill(pid1, 'SIGKILL');
      child.kill('SIGKILL');
      await exited;
    }
  }
}

test('a SIGTERM to PID 1 while a command starts up ends the container at once with 143: the image\'s ENTRYPOINT, and the index-build Job\'s shell', async (t) => {
  if (process.platform !== 'linux' || spawnSync('unshare', ['--user', '--map-root-user', '--pid', '--fork', 'true']).status !== 0) {
    return t.skip('no unprivileged user and PID namespaces (unshare) on this machine');
  }
  const [init, linter] = await Promise.all([installOrSkip(tini), installOrSkip(deployLint)]);
  if (init.skip ?? linter.skip) return t.skip((init.skip ?? linter.skip)!);
  // A broker that accepts and never answers: the memory updater's start-up waits on it, before it
  // listens for SIGTERM (src/cli/commands/memory-updater.ts).
  const held: Socket[] = [];
  const broker: Server = createServer((socket) => void held.push(socket));
  await new Promise<void>((done) => broker.listen(0, '127.0.0.1', done));
  const memory = join(scratch, 'memory');
  mkdirSync(memory);
  const updater = ['bin/cuilink.js', 'memory', 'updater', '--memory', memory, '--learn-fraction', '0.5', '--brokers', `127.0.0.1:${(broker.address() as { port: number }).port}`];
  const started = /^memory-updater: learn\/measure split/m;
  const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };
  // 143 is 128 + SIGTERM: the signal ended it. Anything else means PID 1 dropped the signal and the
  // command ran on until it ended by itself (the updater gives up on the broker) or the hang guard.
  const programs = (argv: string[]) => argv.map((a) => (a === 'tini' ? init.tool! : a === 'node' ? process.execPath : a));
  try {
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(stagesOf(DOCKERFILES[0]!).get('runtime')!)![1]!) as string[];
    const image = await stopDuringStartup(programs([...entrypoint.slice(0, -1), ...updater]), started, env);
    assert.equal(image.status, 143, `the image's ENTRYPOINT ${JSON.stringify(entrypoint)}: ${image.status}\n${image.output.slice(-1500)}`);
    const job = (JSON.parse((await run(linter.tool!, ['yaml', 'deploy/k8s/base/index-build-job.yaml'])).stdout) as Json[])[0]!;
    const command = job.spec.template.spec.containers[0].command as string[];
    const shell = await stopDuringStartup(programs([...command, `node ${updater.join(' ')}`]), started, env);
    assert.equal(shell.status, 143, `the Job's command ${JSON.stringify(command)}: ${shell.status}\n${shell.output.slice(-1500)}`);
  } finally {
    for (const socket of held) socket.destroy();
    broker.close();
  }
});
