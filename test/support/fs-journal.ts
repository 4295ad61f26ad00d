import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

/** What reached the disk, in order: an fsync of a path (file or directory), or a rename. */
export type FsEvent = { op: 'fsync'; path: string } | { op: 'rename'; from: string; to: string } | { op: 'mark'; what: string };

/**
 * Records the fsyncs and renames that node:fs performs (every importer's named imports included,
 * through syncBuiltinESMExports), calling through to the real functions: the writes happen as
 * they would, and a test can check what was flushed before what was renamed or committed. Only
 * fds opened through fs.openSync are named; a crash cannot be simulated, so this is what can be
 * checked of durability.
 */
export function journalFs(): { events: FsEvent[]; mark(what: string): void; restore(): void } {
  const real = { openSync: fs.openSync, closeSync: fs.closeSync, fsyncSync: fs.fsyncSync, renameSync: fs.renameSync };
  const pathOf = new Map<number, string>();
  const events: FsEvent[] = [];
  const patched = fs as unknown as Record<keyof typeof real, unknown>;
  patched.openSync = (...args: Parameters<typeof fs.openSync>) => {
    const fd = real.openSync(...args);
    pathOf.set(fd, String(args[0]));
    return fd;
  };
  patched.closeSync = (fd: number) => {
    pathOf.delete(fd);
    real.closeSync(fd);
  };
  patched.fsyncSync = (fd: number) => {
    real.fsyncSync(fd);
    events.push({ op: 'fsync', path: pathOf.get(fd) ?? `fd ${fd}` });
  };
  patched.renameSync = (from: fs.PathLike, to: fs.PathLike) => {
    real.renameSync(from, to);
    events.push({ op: 'rename', from: String(from), to: String(to) });
  };
  syncBuiltinESMExports();
  return {
    events,
    mark: (what) => void events.push({ op: 'mark', what }),
    restore() {
      Object.assign(patched, real);
      syncBuiltinESMExports();
    },
  };
}

/** The index of the first event `match` accepts, -1 when none does. */
export function indexOfEvent(events: readonly FsEvent[], match: (event: FsEvent) => boolean): number {
  return events.findIndex(match);
}
