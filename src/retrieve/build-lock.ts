import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { CuilinkError } from '../kb/errors.ts';
import { isProcessAlive } from '../kb/process-alive.ts';
import { builderOf, markBuilder } from './abandoned-builds.ts';
import { breakStaleLock, lockAge } from './stale-lock.ts';

/**
 * How long a process waits for another one's build before it gives up: a fresh default index took
 * 7.5 min on 2 cores at load 10 (docs/stream.md), and a holder on another host that died leaves its
 * lock for good (its pid cannot be looked up here).
 */
export const BUILD_LOCK_WAIT_MS = 30 * 60_000;
/** A lock directory still without its builder.json this long after it was made: its taker died between the two steps. */
const UNMARKED_STALE_MS = 30_000;
const POLL_MS = 1000;

/** The locks this process holds: another call in the same process waits on them like anyone else. */
const held = new Set<string>();

/**
 * Runs `build` holding `lock`, a directory (mkdir is atomic on every local and network filesystem)
 * marked with its holder's host and pid (abandoned-builds.ts). A process that finds it taken says
 * so once and waits for the holder to finish (then `build` typically finds the result made and
 * returns at once). A lock whose holder on this host is gone (Ctrl-C, a kill, a restarted container
 * whose process has the holder's pid) is broken; any other (a live holder's, or another host's,
 * never judged by pid) is waited for up to `waitMs`, then BUILD_LOCKED names the lock to remove.
 */
export async function withBuildLock<T>(lock: string, options: { what: string; log: (line: string) => void; waitMs?: number }, build: () => Promise<T>): Promise<T> {
  const waitMs = options.waitMs ?? BUILD_LOCK_WAIT_MS;
  const started = Date.now();
  let saidWaiting = false;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = builderOf(lock);
    if (holder === undefined && !existsSync(lock)) continue; // released since
    if (isAbandoned(lock)) {
      breakStaleLock(lock, () => isAbandoned(lock));
      // Still there: another process is breaking it (or broke it and took it), not a moment to spin.
      if (existsSync(lock)) await sleep(POLL_MS);
      continue;
    }
    const who = holder === undefined ? 'another process' : `pid ${holder.pid} on ${holder.host === hostname() ? 'this host' : `host ${holder.host}`}`;
    if (!saidWaiting) {
      options.log(`waiting for ${who} to finish building ${options.what} (it holds ${lock})`);
      saidWaiting = true;
    }
    if (Date.now() - started >= waitMs) {
      throw new CuilinkError('BUILD_LOCKED', `${who} has held ${lock} for over ${Math.round(waitMs / 60_000)} min while building ${options.what}: if nothing there is building it any more, remove ${lock} and start again`, { retriable: true });
    }
    await sleep(POLL_MS);
  }
  held.add(lock);
  try {
    markBuilder(lock);
    return await build();
  } finally {
    held.delete(lock);
    rmSync(lock, { recursive: true, force: true });
  }
}

function isAbandoned(lock: string): boolean {
  const holder = builderOf(lock);
  if (holder === undefined) return lockAge(lock) > UNMARKED_STALE_MS;
  // Another host's pids mean nothing here (a shared cache volume).
  if (holder.host !== hostname()) return false;
  // Our own pid on a lock we do not hold: an earlier process had it (a container restarts with the same pids).
  if (holder.pid === process.pid) return !held.has(lock);
  return !isProcessAlive(holder.pid);
}
