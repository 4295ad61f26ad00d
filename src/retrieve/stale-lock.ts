import { mkdirSync, rmSync, statSync } from 'node:fs';

/** A breakers' lock older than this was left by a breaker that died between taking and releasing it (both are one look and one removal). */
const STALE_BREAK_MS = 30_000;

/** How long ago `lock` was made (0 when it is gone). */
export function lockAge(lock: string): number {
  return Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
}

/**
 * Removes `lock` if `isStale()` still says so when asked again under a second lock
 * (`<lock>.break`) that every breaker takes: the look and the removal are then one step. Removed
 * on an earlier look, a lock another writer took since (having broken the same stale one first)
 * would be removed too, and both writers would go on holding it.
 */
export function breakStaleLock(lock: string, isStale: () => boolean): void {
  const breaking = `${lock}.break`;
  try {
    mkdirSync(breaking);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // Another writer is breaking it; a breaker that died doing so left this.
    if (lockAge(breaking) > STALE_BREAK_MS) rmSync(breaking, { recursive: true, force: true });
    return;
  }
  try {
    if (isStale()) rmSync(lock, { recursive: true, force: true });
  } finally {
    rmSync(breaking, { recursive: true, force: true });
  }
}
