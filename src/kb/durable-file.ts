import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/*
 * Writes that must survive a crash or a power cut before anyone relies on them: the evaluator's
 * state before its offsets are committed, a memory or index version before CURRENT names it. A
 * write that returned has only reached the page cache; without fsync a rename can reach the disk
 * before the data it points at, and a reader finds a renamed file empty or cut short.
 */

/** Writes `data` to `path` (created or truncated) and flushes it to the disk before returning. */
export function writeFileDurably(path: string, data: string | Uint8Array, options: { mode?: number } = {}): void {
  const fd = openSync(path, 'w', options.mode ?? 0o666);
  try {
    // The mode applies to a file this call creates only: one left by a crash keeps its own.
    if (options.mode !== undefined) fchmodSync(fd, options.mode);
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written, bytes.length - written);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Flushes a file another writer made (a native library's, a child process's) to the disk. */
export function syncFile(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Flushes a directory's entries (a file created, renamed in or out) to the disk. A filesystem
 * that cannot fsync a directory (EINVAL, ENOTSUP: some network and FUSE mounts) orders its
 * entries itself or not at all: nothing more can be done there, so it is not an error.
 */
export function syncDirectory(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, 'r');
  } catch (error) {
    if (isUnsupported(error)) return;
    throw error;
  }
  try {
    fsyncSync(fd);
  } catch (error) {
    if (!isUnsupported(error)) throw error;
  } finally {
    closeSync(fd);
  }
}

/**
 * Replaces `path` so that a reader, even after a crash, finds the old content or the new one whole:
 * `temporary` (beside it) is written and flushed, renamed over `path`, and the directory flushed.
 * A write that fails (disk full, I/O error) removes `temporary`: it may hold half of `data`.
 */
export function replaceFileDurably(path: string, data: string | Uint8Array, options: { temporary: string; mode?: number }): void {
  try {
    writeFileDurably(options.temporary, data, { mode: options.mode });
    renameSync(options.temporary, path);
  } catch (error) {
    removeQuietly(options.temporary);
    throw error;
  }
  syncDirectory(dirname(path));
}

/** Cleanup after a failed write must not hide why it failed (a second error from a failing disk). */
function removeQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // The write's own error is the one to report.
  }
}

function isUnsupported(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'EINVAL' || code === 'ENOTSUP' || code === 'EISDIR';
}
