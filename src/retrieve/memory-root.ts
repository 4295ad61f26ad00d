import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../kb/errors.ts';
import { CURRENT_VERSION_FILE, readCurrentVersion } from './index-versions.ts';
import { MEMORY_MANIFEST_FILE, readMemoryManifest } from './memory-manifest.ts';

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

/** Points `CURRENT` at a complete version; the rename is the atomic switch readers see. */
export function activateMemoryVersion(root: string, version: string): void {
  readMemoryManifest(join(root, version));
  const temporary = join(root, `.${CURRENT_VERSION_FILE}.${process.pid}`);
  writeFileSync(temporary, `${version}\n`);
  renameSync(temporary, join(root, CURRENT_VERSION_FILE));
}
