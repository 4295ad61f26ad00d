import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { replaceFileDurably } from '../kb/durable-file.ts';
import { InputError } from '../kb/errors.ts';
import { builderTag, thisBuilder, type Builder } from './abandoned-builds.ts';
import { INDEX_MANIFEST_FILE, readIndexManifest, verifyIndexFiles, type IndexManifest } from './index-manifest.ts';

/**
 * An index root holds immutable version directories side by side (`ROOT/<version>/manifest.json`)
 * and a `CURRENT` file naming the one to serve. A new KB or model is rolled out by building a new
 * version next to the old ones and then rewriting `CURRENT` (atomically); replicas pick it up as
 * they restart, each ready only once its index is loaded, and rollback is `CURRENT` set back.
 */
export const CURRENT_VERSION_FILE = 'CURRENT';

/** A version name is one plain path segment, so `CURRENT` can never point outside the root. */
const VERSION_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** index-builder.ts writes `<outDir>.building-<host>-<pid>` and renames it when complete. */
const STAGING_MARK = '.building-';
/** An old version moved aside while `index build --force` replaces it (index-builder.ts): never a version. */
const REPLACED_MARK = '.replaced-';
const isLeftover = (name: string) => name.includes(STAGING_MARK) || name.includes(REPLACED_MARK);

export interface IndexVersion {
  name: string;
  dir: string;
  manifest: IndexManifest;
}

export interface ResolvedIndex {
  dir: string;
  /** The version directory's name; absent when the path was itself an index directory. */
  version?: string;
  /** How it was chosen: the path was an index, a pinned version, or the root's CURRENT. */
  chosenBy: 'index-dir' | 'pinned' | 'current';
}

function checkVersionName(version: string, where: string): void {
  if (!VERSION_NAME.test(version) || isLeftover(version)) {
    throw new InputError(`${where}: '${version}' is not a version name (one path segment of letters, digits, '.', '_' or '-')`, 'BAD_INDEX_VERSION');
  }
}

function versionAt(root: string, name: string): IndexVersion {
  const dir = join(root, name);
  return { name, dir, manifest: readIndexManifest(dir) };
}

/** The complete version directories under `root` (a manifest that validates), oldest first by build time. */
export function listIndexVersions(root: string): IndexVersion[] {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch (error) {
    throw new InputError(`${root}: ${(error as Error).message}`, 'BAD_INDEX', error);
  }
  const versions: IndexVersion[] = [];
  for (const name of names) {
    if (!VERSION_NAME.test(name) || isLeftover(name)) continue;
    const dir = join(root, name);
    // A dangling link, or an entry removed since readdir: not a version, and no crash.
    if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory() || !existsSync(join(dir, INDEX_MANIFEST_FILE))) continue;
    try {
      versions.push(versionAt(root, name));
    } catch {
      // A manifest that does not validate marks a broken or foreign directory: never served.
    }
  }
  return versions.sort((a, b) => a.manifest.createdAt.localeCompare(b.manifest.createdAt) || a.name.localeCompare(b.name));
}

/** The version `CURRENT` names, or undefined when the root has no `CURRENT`. */
export function readCurrentVersion(root: string): string | undefined {
  const file = join(root, CURRENT_VERSION_FILE);
  if (!existsSync(file)) return undefined;
  const version = readFileSync(file, 'utf8').trim();
  checkVersionName(version, file);
  return version;
}

/**
 * The index directory to open for `path`: the pinned `version` of the root `path` when given;
 * else `path` itself when it is an index directory; else the version the root's `CURRENT` names.
 * A pinned or current version that is missing or incomplete is an error, never a silent fallback
 * to another version, and a root is only ever served through an explicit `CURRENT`.
 */
export function resolveIndexDir(path: string, options: { version?: string } = {}): ResolvedIndex {
  if (options.version !== undefined && options.version !== '') {
    checkVersionName(options.version, 'pinned index version');
    return { dir: versionAt(path, options.version).dir, version: options.version, chosenBy: 'pinned' };
  }
  if (existsSync(join(path, INDEX_MANIFEST_FILE))) return { dir: path, chosenBy: 'index-dir' };
  const current = readCurrentVersion(path);
  if (current !== undefined) return { dir: versionAt(path, current).dir, version: current, chosenBy: 'current' };
  throw new InputError(
    `${join(path, INDEX_MANIFEST_FILE)}: no such file (not an index directory) and no ${CURRENT_VERSION_FILE} file (not an index root): build an index with \`cuilink index build\`, activate a version of a root with \`cuilink index activate\``,
    'BAD_INDEX',
  );
}

/**
 * Points `CURRENT` at `version` after checking it is complete and its files are the ones it was
 * built with (checksums, when its manifest has them): a damaged version is refused here, before
 * replicas restarting onto it fail to open it one after another. The rename makes the switch atomic.
 */
export function activateIndexVersion(root: string, version: string): IndexVersion & { verified: boolean } {
  checkVersionName(version, 'index version');
  const target = versionAt(root, version);
  const verified = verifyIndexFiles(target.dir, target.manifest);
  writeCurrentVersion(root, version);
  return { ...target, verified };
}

/**
 * Replaces `root/CURRENT` by a rename: readers see the old version or the new one, never half a
 * file, also after a power cut (flushed before and after the rename); a write that fails leaves
 * the old `CURRENT` and no temporary file.
 */
export function writeCurrentVersion(root: string, version: string): void {
  replaceFileDurably(join(root, CURRENT_VERSION_FILE), `${version}\n`, { temporary: currentVersionTemporary(root) });
}

/**
 * Where `writer` writes the next `CURRENT` before renaming it into place: tagged with host and pid
 * (builderTag), since on a shared volume writers on two hosts often have the same pid (containers
 * start at 1) and would overwrite, or rename away, each other's half-written file.
 */
export function currentVersionTemporary(root: string, writer: Builder = thisBuilder()): string {
  return join(root, `.${CURRENT_VERSION_FILE}.${builderTag(writer)}`);
}
