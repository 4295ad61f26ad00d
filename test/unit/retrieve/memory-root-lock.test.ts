import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs, { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BiEncoder } from '../../../src/encode/bi-encoder.ts';
import { MemoryLearner, publishMemory } from '../../../src/link/memory-learner.ts';
import { activateMemoryVersion, currentMemoryVersion } from '../../../src/retrieve/memory-root.ts';
import { TrigramEncoder } from '../../support/trigram-encoder.ts';

// The writers' lock of a memory root (ROOT/.current.lock) when a writer died holding it: two live
// writers both judge it stale. The one that breaks it first takes the lock; the other, which judged
// the dead writer's lock stale a moment before, must not then remove the lock its peer just took.
// The schedule is fixed, not raced: the peer is a second process (memory-lock-writer.ts) started
// between this writer's look at the stale lock and what it does about it, and held inside the lock.

const trigram = new TrigramEncoder();
const encoder = { modelId: trigram.modelId, modelSha256: 'e'.repeat(64), dims: trigram.dims, batchIndependent: true, manifest: { query: { mode: 'mention' } }, encode: (texts: string[]) => trigram.encode(texts) } as unknown as BiEncoder;
const learner = new MemoryLearner(encoder);
const label = (text: string, id: string) => ({ record: { text, label: 'Disease', ids: [id], source: 'test', time: 1, noteId: 'n1', mentionId: text } });
const PEER = join(import.meta.dirname, '..', '..', 'support', 'memory-lock-writer.ts');

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
/** Replaces node:fs's statSync for every importer, memory-root.ts's named import included. */
function setStatSync(statSync: typeof fs.statSync): void {
  (fs as { statSync: typeof fs.statSync }).statSync = statSync;
  syncBuiltinESMExports();
}

test('a writer that judged a dead writer\'s lock stale does not remove the lock a live peer took since', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-memory-lock-'));
  const root = join(dir, 'memory');
  const signals = join(dir, 'signals');
  mkdirSync(signals);
  const realStatSync = fs.statSync;
  try {
    // CURRENT names v0; two writers loaded v0 and each saved its change beside it (v1: the peer's, v2: ours).
    const base = learner.openOrCreate(root);
    await learner.add(base, [label('gout', 'MESH:D006073')]);
    const v0 = publishMemory(base, root);
    const versions: string[] = [];
    for (const [text, id] of [['asthma', 'MESH:D001249'], ['pneumonia', 'MESH:D011014']] as const) {
      const store = learner.openOrCreate(root);
      await learner.add(store, [label(text, id)]);
      versions.push(store.save(root).memoryVersion);
    }
    const [v1, v2] = versions as [string, string];
    // A writer died holding the lock a minute ago.
    const lock = join(root, '.current.lock');
    mkdirSync(lock);
    const minuteAgo = new Date(Date.now() - 60_000);
    utimesSync(lock, minuteAgo, minuteAgo);

    // Our first look at the lock sees the dead writer's; before we act on it, the peer breaks it,
    // takes the lock and reads CURRENT (v0), and waits there, inside the lock.
    let peer: ReturnType<typeof spawn> | undefined;
    let peerOutput = '';
    const peerExit = new Promise<number | null>((resolve) => {
      setStatSync(((...args: Parameters<typeof fs.statSync>) => {
        const stats = realStatSync(...args);
        if (peer === undefined && args[0] === lock) {
          peer = spawn(process.execPath, ['--import', 'tsx', PEER, root, v1, v0, signals], { stdio: ['ignore', 'pipe', 'pipe'] });
          peer.stdout!.on('data', (d: Buffer) => (peerOutput += d.toString()));
          peer.stderr!.on('data', (d: Buffer) => (peerOutput += d.toString()));
          peer.once('exit', (code) => resolve(code));
          const deadline = Date.now() + 60_000;
          while (!existsSync(join(signals, 'holding')) && Date.now() < deadline) sleep(10);
          assert.ok(existsSync(join(signals, 'holding')), 'the peer took the lock');
        }
        return stats;
      }) as typeof fs.statSync);
    });

    let ours: unknown;
    try {
      activateMemoryVersion(root, v2, v0);
    } catch (error) {
      ours = error;
    } finally {
      setStatSync(realStatSync);
    }
    assert.ok(peer, 'the stale lock was looked at');
    // The peer goes on: it makes its version current and releases the lock.
    writeFileSync(join(signals, 'go'), '');
    assert.equal(await peerExit, 0, `the peer, which held the lock, publishes: ${peerOutput}`);
    assert.equal(currentMemoryVersion(root), v1);
    // We never held the lock while the peer did: we are refused (retriable), not silently published over.
    assert.ok(ours !== undefined, `we made ${v2} current while the peer held the lock, and the peer then made ${v1} current over it: ${v2}'s change is lost although both writers succeeded`);
    assert.ok(['MEMORY_LOCKED', 'MEMORY_CHANGED'].includes((ours as { code?: string }).code ?? ''), String(ours));
    assert.equal((ours as { retriable?: boolean }).retriable, true);
  } finally {
    setStatSync(realStatSync);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a lock left by a dead writer is broken: the next writer publishes and leaves no lock behind', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-memory-lock-'));
  const root = join(dir, 'memory');
  try {
    const base = learner.openOrCreate(root);
    await learner.add(base, [label('gout', 'MESH:D006073')]);
    publishMemory(base, root);
    const lock = join(root, '.current.lock');
    mkdirSync(lock);
    const minuteAgo = new Date(Date.now() - 60_000);
    utimesSync(lock, minuteAgo, minuteAgo);
    const store = learner.openOrCreate(root);
    await learner.add(store, [label('asthma', 'MESH:D001249')]);
    const published = publishMemory(store, root);
    assert.equal(currentMemoryVersion(root), published);
    assert.deepEqual(fs.readdirSync(root).filter((name) => name.startsWith('.current.lock')), [], 'neither the lock nor the breakers\' lock is left');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
