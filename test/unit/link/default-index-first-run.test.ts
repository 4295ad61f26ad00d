import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { defaultOntologyPath } from '../../../src/kb/default-ontology.ts';
import { DEFAULT_MODEL_DIR, defaultIndexDir, ensureDefaultIndex } from '../../../src/link/default-index.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { runFirstRunsTogether } from '../../support/first-runs.ts';

// Two first runs on one cache directory (two linker replicas on a shared cache volume started by
// one `docker compose up`, or `cuilink demo` beside `cuilink link`): the default index is built
// once, by one of them, and the other waits for it and uses it. The ontology is laid out in the
// cache beforehand (as the image build does with the vendored one), so nothing calls pip.

const lines = (log: string, start: string) => log.split('\n').filter((line) => line.startsWith(start)).length;
const builds = (log: string) => lines(log, 'building the default index');
const waits = (log: string) => lines(log, 'waiting for');

function seededCache(): { work: string; cacheDir: string } {
  const work = mkdtempSync(join(tmpdir(), 'cuilink-first-run-'));
  const cacheDir = join(work, 'cache');
  const ontology = defaultOntologyPath(cacheDir);
  mkdirSync(dirname(ontology), { recursive: true });
  copyFileSync(join('test', 'fixtures', 'kb', 'clinical-mini.obo'), ontology);
  return { work, cacheDir };
}

/** A lock on the default index as `holder` left it. */
function lockAs(cacheDir: string, holder: object): string {
  const lock = `${defaultIndexDir(cacheDir, DEFAULT_MODEL_DIR)}.lock`;
  mkdirSync(lock, { recursive: true });
  writeFileSync(join(lock, 'builder.json'), JSON.stringify(holder));
  return lock;
}

test('two first runs started together build the default index once: the other waits for it and uses that index', async () => {
  const { work, cacheDir } = seededCache();
  try {
    const [first, second] = await runFirstRunsTogether(2, cacheDir);
    const output = `first:\n${first!.stdout}${first!.stderr}\nsecond:\n${second!.stdout}${second!.stderr}`;
    assert.deepEqual([first!.code, second!.code], [0, 0], output);
    assert.equal(builds(first!.stderr) + builds(second!.stderr), 1, `the index was built once:\n${output}`);
    const waiter = builds(first!.stderr) === 0 ? first! : second!;
    // It says once that it waits (unless it was so slow to look that the build was already done).
    assert.ok(waits(waiter.stderr) <= 1, `the other said at most once that it waits:\n${output}`);
    const dirs = [first!.stdout.trim(), second!.stdout.trim()];
    assert.equal(dirs[0], dirs[1], output);
    assert.ok(existsSync(join(dirs[0]!, 'manifest.json')));
    assert.deepEqual(readdirSync(join(cacheDir, 'indexes')), [basename(dirs[0]!)], 'no staging directory, replaced index or lock is left');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('a lock whose holder on this host is alive is waited for, not broken; once its process is gone it is broken and the index built', async () => {
  const { work, cacheDir } = seededCache();
  const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    const lock = lockAs(cacheDir, { host: hostname(), pid: holder.pid });
    const log: string[] = [];
    await assert.rejects(
      ensureDefaultIndex({ cacheDir, log: (line) => log.push(line), lockWaitMs: 0 }),
      (e: unknown) => e instanceof CuilinkError && e.code === 'BUILD_LOCKED' && e.retriable && e.message.includes(`remove ${lock}`),
    );
    assert.deepEqual(log, [`waiting for pid ${holder.pid} on this host to finish building the default index (it holds ${lock})`]);
    assert.ok(existsSync(join(lock, 'builder.json')), 'the live holder keeps its lock');

    const exited = new Promise((resolve) => holder.once('exit', resolve));
    holder.kill();
    await exited;
    log.length = 0;
    const dir = await ensureDefaultIndex({ cacheDir, log: (line) => log.push(line), lockWaitMs: 0 });
    assert.equal(builds(log.join('\n')), 1, log.join('\n'));
    assert.ok(existsSync(join(dir, 'manifest.json')));
    assert.deepEqual(readdirSync(join(cacheDir, 'indexes')), [basename(dir)], 'the broken lock and its breakers\' lock are gone');
  } finally {
    holder.kill();
    rmSync(work, { recursive: true, force: true });
  }
});

test('a lock with our own pid that we do not hold (an earlier process: a restarted container has the same pids) is broken', async () => {
  const { work, cacheDir } = seededCache();
  try {
    lockAs(cacheDir, { host: hostname(), pid: process.pid });
    const log: string[] = [];
    const dir = await ensureDefaultIndex({ cacheDir, log: (line) => log.push(line), lockWaitMs: 0 });
    assert.equal(waits(log.join('\n')), 0, log.join('\n'));
    assert.deepEqual(readdirSync(join(cacheDir, 'indexes')), [basename(dir)]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('another host\'s lock (a shared cache volume) is never judged by its pid: waited for, then an error naming the lock', async () => {
  const { work, cacheDir } = seededCache();
  try {
    // Its pid is dead here, or ours: neither says anything about a process on another host.
    for (const pid of [Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout), process.pid]) {
      const lock = lockAs(cacheDir, { host: `${hostname()}-elsewhere`, pid });
      const log: string[] = [];
      await assert.rejects(
        ensureDefaultIndex({ cacheDir, log: (line) => log.push(line), lockWaitMs: 0 }),
        (e: unknown) => e instanceof CuilinkError && e.code === 'BUILD_LOCKED' && e.message.startsWith(`pid ${pid} on host ${hostname()}-elsewhere has held ${lock} for over 0 min`),
      );
      assert.deepEqual(log, [`waiting for pid ${pid} on host ${hostname()}-elsewhere to finish building the default index (it holds ${lock})`]);
      assert.deepEqual(readdirSync(join(cacheDir, 'indexes')), [basename(lock)], 'nothing built, the lock left alone');
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('two calls at once in one process build the default index once (our own pid on the lock is then no sign of an earlier process)', async () => {
  const { work, cacheDir } = seededCache();
  try {
    const log: string[] = [];
    const dirs = await Promise.all([0, 1].map(() => ensureDefaultIndex({ cacheDir, log: (line) => log.push(line) })));
    assert.equal(dirs[0], dirs[1]);
    assert.equal(builds(log.join('\n')), 1, log.join('\n'));
    assert.equal(waits(log.join('\n')), 1, log.join('\n'));
    assert.deepEqual(readdirSync(join(cacheDir, 'indexes')), [basename(dirs[0]!)]);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
