import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CuilinkError, InputError } from '../kb/errors.ts';
import { CURRENT_VERSION_FILE, readCurrentVersion, writeCurrentVersion } from './index-versions.ts';
import { MEMORY_MANIFEST_FILE, readMemoryManifest } from './memory-manifest.ts';
import { breakStaleLock, lockAge } from './stale-lock.ts';

/**
 * A memory root holds immutable version directories (`ROOT/<sequence>-<digest>/`) and a `CURRENT`
 * file naming the one to serve, like an index root (index-versions.ts). Whoever learns (`cuilink
 * memory add|remove`, the memory updater) writes a complete new version beside the old ones and
 * then replaces `CURRENT` by a rename; linkers poll `CURRENT` (memory-watcher.ts) and swap.
 */
export function resolveMemoryDir(path: string): { dir: string; root: string | undefined; version: string } {
  if (existsSync(join(path, MEMORY_MANIFEST_FILE))) return { dir: path, root: undefined, version: readMemoryManifest(path).memoryVersion };
  const current = readCurrentVersion(path);
  if (current === undefined) throw new InputError(`${path}: neither a memory version directory nor a memory root with a ${CURRENT_VERSION_FILE} file (create one with \`cuilink memory add\`)`, 'BAD_MEMORY');
  return { dir: join(path, current), root: path, version: current };
}

/** The version `CURRENT` names, or undefined (no memory yet). Cheap: one small file read. */
export function currentMemoryVersion(root: string): string | undefined {
  const file = join(root, CURRENT_VERSION_FILE);
  if (!existsSync(file)) return undefined;
  return readFileSync(file, 'utf8').trim() || undefined;
}

/**
 * Points `CURRENT` at a complete version; the rename is the atomic switch readers see. With
 * `expected` (the version the writer started from; null: none yet) it switches only while
 * `CURRENT` still names that version, under a lock shared by every writer of the root: a writer
 * that loaded the memory before another published must not publish its older copy over the other
 * one's labels or removals (`MEMORY_CHANGED`, retriable: load the memory again and redo the change).
 */
export function activateMemoryVersion(root: string, version: string, expected?: string | null): void {
  readMemoryManifest(join(root, version));
  const swap = () => writeCurrentVersion(root, version);
  if (expected === undefined) return swap();
  withRootLock(root, () => {
    const current = currentMemoryVersion(root) ?? null;
    if (current !== expected) {
      throw new CuilinkError('MEMORY_CHANGED', `${root}: CURRENT moved from ${expected ?? '(none)'} to ${current ?? '(none)'} while this writer worked; its version ${version} is written but not made current: run it again`, { retriable: true });
    }
    swap();
  });
}

const LOCK_DIR = '.current.lock';
/** A lock older than this was left by a writer that died between taking and releasing it. */
const STALE_LOCK_MS = 30_000;

/** Runs `fn` holding the root's writer lock (a directory: mkdir is atomic on every local and network filesystem). */
function withRootLock<T>(root: string, fn: () => T): T {
  const lock = join(root, LOCK_DIR);
  for (let attempt = 0; ; attempt++) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const age = lockAge(lock);
      if (age > STALE_LOCK_MS) breakStaleLock(lock, () => lockAge(lock) > STALE_LOCK_MS);
      else if (attempt >= 200) throw new CuilinkError('MEMORY_LOCKED', `${root}: another writer holds ${LOCK_DIR} (for ${Math.round(age / 1000)} s)`, { retriable: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
