import { accessSync, closeSync, constants, fchmodSync, openSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { InputError } from '../kb/errors.ts';

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** Whether two paths name one file: the same inode when both exist (links and `./` spellings included), else the same absolute path. */
export function sameFile(a: string, b: string): boolean {
  const [sa, sb] = [statOrUndefined(a), statOrUndefined(b)];
  if (sa !== undefined && sb !== undefined) return sa.dev === sb.dev && sa.ino === sb.ino;
  return resolve(a) === resolve(b);
}

type FlagPath = readonly [flag: string, path: string | undefined];

/**
 * Refuses an output that is one of the command's inputs (it would be replaced, read or not) or
 * another of its outputs (one would overwrite the other). `-` (stdin/stdout) is never a clash.
 */
export function refuseClobbering(outputs: readonly FlagPath[], inputs: readonly FlagPath[]): void {
  const named = (list: readonly FlagPath[]) => list.filter((entry): entry is readonly [string, string] => entry[1] !== undefined && entry[1] !== '-');
  const outs = named(outputs);
  for (const [i, [flag, path]] of outs.entries()) {
    for (const [inFlag, inPath] of named(inputs)) {
      if (sameFile(path, inPath)) throw new InputError(`--${flag} ${path} is the --${inFlag} file: writing it would destroy the input`, 'BAD_FLAGS');
    }
    for (const [otherFlag, otherPath] of outs.slice(i + 1)) {
      if (sameFile(path, otherPath)) throw new InputError(`--${flag} and --${otherFlag} must be different files`, 'BAD_FLAGS');
    }
  }
}

function reason(error: unknown): string {
  return (error as Error).message;
}

/** `-` is stdout where a command says so (link, kb export, memory export); an output that is a file refuses it rather than write a file named `-`. */
function refuseStdout(path: string, flag: string): void {
  if (path === '-') throw new InputError(`--${flag} -: this output is written to a file, not to stdout: give a file name`, 'BAD_FLAGS');
}

/**
 * Fails now, with one line naming the flag, when `path` cannot be written (missing directory, a
 * directory, no permission), so a long run does not end in an error with its results lost. The
 * file is left as it was: an existing one is opened for appending and not written, a new one is
 * removed again. Devices and pipes (/dev/stdout) are only checked for permission: opening a pipe
 * would wait for its reader.
 */
export function checkWritable(path: string, flag: string): void {
  refuseStdout(path, flag);
  const fail = (why: string, cause?: unknown): never => {
    throw new InputError(`--${flag}: cannot write ${path}: ${why}`, 'OUTPUT_ERROR', cause);
  };
  const stats = statOrUndefined(path);
  if (stats?.isDirectory()) fail('a directory, not a file');
  if (stats !== undefined && !stats.isFile()) {
    try {
      accessSync(path, constants.W_OK);
    } catch (error) {
      fail(reason(error), error);
    }
    return;
  }
  let fd: number;
  try {
    fd = openSync(path, 'a');
  } catch (error) {
    return fail(reason(error), error);
  }
  closeSync(fd);
  if (stats === undefined) rmSync(path, { force: true });
}

/** Writes a command's output file, or one line naming the flag and why (exit 2, no stack trace). */
export function writeOutput(path: string, text: string, flag: string): void {
  refuseStdout(path, flag);
  try {
    writeFileSync(path, text);
  } catch (error) {
    throw new InputError(`--${flag}: cannot write ${path}: ${reason(error)}`, 'OUTPUT_ERROR', error);
  }
}

/** An output written whole or not at all: see openReplacement. */
export interface Replacement {
  /** Where to write. */
  readonly fd: number;
  /** Puts what was written in place of the file (the fd must be closed by then). */
  commit(): void;
  /** Drops what was written; the file is left as it was. Safe to call after commit. */
  discard(): void;
}

/**
 * Opens a temporary file beside `path` (same directory, so the final rename is atomic) to write an
 * output into: a run that fails part way leaves the previous file as it was, and readers never see
 * half an output. Opened at once, so an unwritable path fails before any work. A path that exists
 * and is no regular file (/dev/stdout, a pipe) is written directly: there is nothing to rename over.
 */
export function openReplacement(path: string, flag: string): Replacement {
  const fail = (why: string, cause?: unknown): never => {
    throw new InputError(`--${flag} ${path}: ${why}`, 'OUTPUT_ERROR', cause);
  };
  const stats = statOrUndefined(path);
  if (stats?.isDirectory()) fail('a directory, not a file');
  if (stats !== undefined && !stats.isFile()) {
    let fd: number;
    try {
      fd = openSync(path, 'w');
    } catch (error) {
      return fail(reason(error), error);
    }
    return { fd, commit: () => {}, discard: () => {} };
  }
  // A symlinked output keeps its link: the file it points at is the one replaced.
  const target = stats === undefined ? path : realpathSync(path);
  if (stats !== undefined) {
    try {
      // Renaming over a read-only file would succeed where writing it does not.
      accessSync(target, constants.W_OK);
    } catch (error) {
      fail(reason(error), error);
    }
  }
  const temporary = join(dirname(target), `.${basename(target)}.${process.pid}.partial`);
  let fd: number;
  try {
    fd = openSync(temporary, 'wx', 0o666);
  } catch (error) {
    // The error is told about --out, not the temporary name the user never gave.
    return fail(reason(error).replace(/, open '.*'$/, ''), error);
  }
  try {
    // The replaced file keeps its permissions (a rename would otherwise bring the umask's).
    if (stats !== undefined) fchmodSync(fd, stats.mode & 0o7777);
  } catch (error) {
    closeSync(fd);
    rmSync(temporary, { force: true });
    fail(reason(error), error);
  }
  let settled = false;
  // Ctrl-C or a SIGTERM part way would otherwise leave the hidden temporary file behind for good:
  // Node's default exit on a signal runs no cleanup. The exit code is the shell's for that signal.
  const onSignal = (signal: NodeJS.Signals) => {
    settle();
    rmSync(temporary, { force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  const settle = () => {
    settled = true;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    fd,
    commit() {
      if (settled) return;
      try {
        renameSync(temporary, target);
      } catch (error) {
        rmSync(temporary, { force: true });
        fail(`cannot write: ${reason(error)}`, error);
      } finally {
        settle();
      }
    },
    discard() {
      if (settled) return;
      settle();
      rmSync(temporary, { force: true });
    },
  };
}
