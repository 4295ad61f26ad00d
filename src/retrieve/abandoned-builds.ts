import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { isProcessAlive } from '../kb/process-alive.ts';

/** Written into a staging directory when it is made: whose it is. */
const BUILDER_FILE = 'builder.json';

/** Marks `staging` as this process's, so that a later build can tell it was abandoned. */
export function markBuilder(staging: string): void {
  writeFileSync(join(staging, BUILDER_FILE), `${JSON.stringify(thisBuilder())}\n`);
}

/**
 * What tells this process's staging directories from every other builder's: host and pid. A pid
 * alone is not enough on a shared volume, where builders on two hosts often have the same one
 * (containers start at 1): each would remove, or rename onto, the other's work in progress.
 */
export function builderTag(builder: Builder = thisBuilder()): string {
  return `${builder.host.replace(/[^A-Za-z0-9.-]/g, '_')}-${builder.pid}`;
}

/** Who writes: a host and a process on it. */
export interface Builder {
  host: string;
  pid: number;
}

export function thisBuilder(): Builder {
  return { host: hostname(), pid: process.pid };
}

/** The mark is no part of the index: taken out just before the staging directory is renamed into place. */
export function unmarkBuilder(staging: string): void {
  rmSync(join(staging, BUILDER_FILE), { force: true });
}

export interface RemoveAbandonedOptions {
  /**
   * The caller vouches that no other process on any host builds `outDir` now, so every staging
   * directory but a live one of this host is abandoned. Without it, another host's cannot be
   * judged (its pids mean nothing here) and stays: a retry of the k8s index-build Job runs in a new
   * pod, that is on another host, and never removed the directory of the pod that was killed.
   */
  soleBuilder?: boolean;
}

/**
 * Removes the staging directories (`<outDir><mark><host>-<pid>`, builderTag) of builds on this host whose process is
 * gone: a build stopped by Ctrl-C or a kill never reaches its own cleanup, and each leaves the
 * vectors written so far behind. Another host's (a shared volume: its pids mean nothing here) and
 * an unmarked one are left alone unless `soleBuilder`; a live process's on this host always.
 * Returns the names removed.
 */
export function removeAbandonedBuilds(outDir: string, mark: string, options: RemoveAbandonedOptions = {}): string[] {
  const parent = dirname(outDir);
  if (!existsSync(parent)) return [];
  const prefix = `${basename(outDir)}${mark}`;
  const removed: string[] = [];
  for (const name of readdirSync(parent)) {
    if (!name.startsWith(prefix)) continue;
    const builder = builderOf(join(parent, name));
    const abandoned = builder === undefined || builder.host !== hostname() ? options.soleBuilder === true : !isProcessAlive(builder.pid);
    if (!abandoned) continue;
    rmSync(join(parent, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

/**
 * Removes old indexes that builds replacing `outDir` (`--force`) moved aside to
 * `<outDir>.replaced-<host>-<pid>` (builderTag) and were killed before deleting: each is a whole
 * old index, as large as the new one. Only while `outDir` holds an index: a build killed between
 * its two renames left none there, and the moved-aside one is then the only whole copy. The owner
 * is read from the name (the builder mark was taken out before the rename): this host's dead
 * process's and this process's own name (a dead process's with our pid: a restarted container) go;
 * another host's only with `soleBuilder`. Returns the names removed.
 */
export function removeAbandonedReplaced(outDir: string, mark: string, options: RemoveAbandonedOptions = {}): string[] {
  if (!existsSync(outDir)) return [];
  const prefix = `${basename(outDir)}${mark}`;
  const thisHost = builderTag({ host: hostname(), pid: 0 }).slice(0, -'-0'.length);
  const removed: string[] = [];
  for (const name of readdirSync(dirname(outDir))) {
    if (!name.startsWith(prefix)) continue;
    const tag = /^(.*)-(\d+)$/.exec(name.slice(prefix.length));
    const ours = tag !== null && tag[1] === thisHost;
    const pid = tag === null ? NaN : Number(tag[2]);
    const abandoned = ours ? pid === process.pid || !isProcessAlive(pid) : options.soleBuilder === true;
    if (!abandoned) continue;
    rmSync(join(dirname(outDir), name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

/** Who marked `dir` (markBuilder), or undefined: unmarked (or not yet). */
export function builderOf(dir: string): Builder | undefined {
  try {
    const value = JSON.parse(readFileSync(join(dir, BUILDER_FILE), 'utf8')) as { host?: unknown; pid?: unknown };
    return typeof value.host === 'string' && Number.isInteger(value.pid) ? { host: value.host, pid: value.pid as number } : undefined;
  } catch {
    return undefined;
  }
}
