import { InputError } from '../kb/errors.ts';
import { normalizeId } from '../kb/ids.ts';
import type { LinkIndex } from '../retrieve/link-index.ts';
import { MemoryStore } from '../retrieve/memory-store.ts';
import { currentMemoryVersion, resolveMemoryDir } from '../retrieve/memory-root.ts';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { MEMORY_MANIFEST_FILE } from '../retrieve/memory-manifest.ts';
import type { MemoryConfig } from './link-config.ts';
import { MemoryEvidence } from './memory-evidence.ts';

export interface MemoryWatcherOptions {
  /** A memory version directory (served as is) or a memory root (its `CURRENT` is polled). */
  path: string;
  index: LinkIndex;
  config: MemoryConfig;
  normalize: (s: string) => string;
  /** The bi-encoder's checksum: prototypes from another model would be compared in the wrong space. */
  modelSha256: string;
  /**
   * Concepts (primary ids) held out of the KB (eval --hold-out): every version loads without their
   * labels, as a memory that never learned them. Kept, they still voted against the concepts
   * left: knowledge of a concept the evaluation pretends the system never heard of.
   */
  exclude?: ReadonlySet<string>;
  /** How often `CURRENT` is read; 0 disables polling. */
  pollMs?: number;
  /** Told of each swap and, once, of each version that could not be loaded (kept serving the old one). */
  onSwap?: (version: string) => void;
  /** `version`: the one `CURRENT` named; undefined when `CURRENT` itself could not be read. */
  onError?: (error: Error, version: string | undefined) => void;
}

/**
 * Serves the memory a linker uses and swaps it when the memory root's `CURRENT` changes: the new
 * version is loaded completely first, then one reference assignment makes it current, so a batch
 * that already read the old one finishes on it and no batch ever sees half a memory. A version
 * that fails to load is reported and skipped; the old one keeps serving.
 */
export class MemoryWatcher {
  private readonly options: MemoryWatcherOptions;
  private evidence: MemoryEvidence | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The last version that failed to load, and its files' sizes and times then: not loaded again until they change or `CURRENT` names another. */
  private failed: { version: string; files: string } | undefined;
  /** `CURRENT` could not be read at the last poll: reported once until it can be. */
  private unreadable = false;

  private constructor(options: MemoryWatcherOptions, evidence: MemoryEvidence | undefined) {
    this.options = options;
    this.evidence = evidence;
  }

  /** A root with no CURRENT yet (a memory the updater has not written to) serves no memory until one appears. */
  static open(options: MemoryWatcherOptions): MemoryWatcher {
    const empty = !existsSync(join(options.path, MEMORY_MANIFEST_FILE)) && currentMemoryVersion(options.path) === undefined;
    const resolved = empty ? undefined : resolveMemoryDir(options.path);
    const watcher = new MemoryWatcher(options, resolved && MemoryWatcher.load(resolved.dir, options));
    if (resolved?.root !== undefined || empty) {
      if ((options.pollMs ?? 1000) <= 0) return watcher;
      watcher.timer = setInterval(() => watcher.poll(), options.pollMs ?? 1000);
      watcher.timer.unref();
    }
    return watcher;
  }

  private static load(dir: string, options: MemoryWatcherOptions): MemoryEvidence {
    const store = MemoryStore.open(dir, options.normalize);
    if (store.model.sha256 !== options.modelSha256) {
      throw new InputError(`${dir}: memory built with model ${store.model.sha256.slice(0, 12)}, the linker runs ${options.modelSha256.slice(0, 12)}; rebuild the memory with this model`, 'MODEL_MISMATCH');
    }
    const { exclude, index } = options;
    if (exclude !== undefined && exclude.size > 0) {
      // An alt id or an unprefixed form of a held-out concept is the same concept.
      store.forgetConcepts((id) => {
        const at = index.indexOf(id) ?? index.indexOf(normalizeId(id));
        return exclude.has(at === undefined ? id : index.concepts[at]!.id);
      });
    }
    return new MemoryEvidence(store, index, options.config);
  }

  current(): MemoryEvidence | undefined {
    return this.evidence;
  }

  /**
   * Reads `CURRENT` and swaps when it names another version; returns whether it swapped. A version
   * that failed is not tried again on every poll while its files stay as they were: it would fail
   * again, and each try would repeat the report and the cost of a load. It is tried again once a
   * file of it changes (a copy between hosts that wrote `CURRENT` before the version's files, a
   * repair), and a new `CURRENT` (the next update, or a rollback) is tried.
   */
  poll(): boolean {
    const root = this.options.path;
    let version: string | undefined;
    try {
      version = currentMemoryVersion(root);
    } catch (error) {
      if (!this.unreadable) this.options.onError?.(error as Error, undefined);
      this.unreadable = true;
      return false;
    }
    this.unreadable = false;
    if (version === undefined || version === this.evidence?.version) return false;
    const dir = join(root, version);
    const files = filesState(dir);
    if (version === this.failed?.version && files === this.failed.files) return false;
    try {
      this.evidence = MemoryWatcher.load(dir, this.options);
      this.failed = undefined;
      this.options.onSwap?.(version);
      return true;
    } catch (error) {
      this.failed = { version, files };
      this.options.onError?.(error as Error, version);
      return false;
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** A version directory's files with their sizes and modification times ('' when it cannot be read): a few stats a poll. */
function filesState(dir: string): string {
  try {
    return readdirSync(dir)
      .sort()
      .map((name) => {
        const stat = statSync(join(dir, name));
        return `${name}:${stat.size}:${stat.mtimeMs}`;
      })
      .join('|');
  } catch {
    return '';
  }
}
