import type { BiEncoder } from '../encode/bi-encoder.ts';
import { InputError } from '../kb/errors.ts';
import { buildQuery } from '../text/context-window.ts';
import { normalizeName } from '../text/normalize.ts';
import type { NewMemoryRecord } from '../retrieve/memory-record.ts';
import { MemoryStore, mixedModes, type MemoryMode } from '../retrieve/memory-store.ts';
import { activateMemoryVersion, resolveMemoryDir } from '../retrieve/memory-root.ts';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CURRENT_VERSION_FILE } from '../retrieve/index-versions.ts';

/** A labelled mention as a source gives it: the record plus, when known, its note text for the query. */
export interface LabelledMention {
  record: NewMemoryRecord;
  /** Note text and offsets when the mention came from a note (a context-mode model needs them). */
  note?: { text: string; start: number; end: number };
}

/**
 * Turns labelled mentions into memory records with prototypes: each mention is encoded exactly as
 * the linker encodes a query (the bi-encoder's query mode, src/text/context-window.ts), so a
 * later mention of the same kind lands next to it.
 */
export class MemoryLearner {
  private readonly encoder: BiEncoder;
  private readonly batch: number;

  constructor(encoder: BiEncoder, options: { batch?: number } = {}) {
    this.encoder = encoder;
    this.batch = options.batch ?? 256;
  }

  get model(): { id: string; sha256: string; dims: number } {
    return { id: this.encoder.modelId, sha256: this.encoder.modelSha256, dims: this.encoder.dims };
  }

  /**
   * The memory at `root` (its CURRENT version), or a new empty one when the root has none yet.
   * `mode.rawText: false` creates a memory without raw text; an existing memory keeps its own mode
   * (its manifest's `rawText`), and asking for no raw text on one that keeps it is refused.
   */
  openOrCreate(root: string, mode: MemoryMode = {}): MemoryStore {
    const store = existsSync(join(root, CURRENT_VERSION_FILE)) ? MemoryStore.open(resolveMemoryDir(root).dir, normalizeName) : MemoryStore.empty(this.model, normalizeName, mode);
    if (store.model.sha256 !== this.model.sha256) throw new InputError(`${root}: memory built with model ${store.model.sha256.slice(0, 12)}, not ${this.model.sha256.slice(0, 12)}`, 'MODEL_MISMATCH');
    if (mode.rawText === false && store.rawText) throw mixedModes(root, true);
    return store;
  }

  async add(store: MemoryStore, mentions: readonly LabelledMention[]): Promise<number[]> {
    const spec = this.encoder.manifest.query;
    const seqs: number[] = [];
    for (let i = 0; i < mentions.length; i += this.batch) {
      const slice = mentions.slice(i, i + this.batch);
      const queries = slice.map((m) => (m.note ? buildQuery(m.note.text, { start: m.note.start, end: m.note.end, text: m.record.text }, spec) : buildQuery(m.record.text, { start: 0, end: m.record.text.length, text: m.record.text }, spec)));
      // Each alone, as the linker runs a mention, where the model's output depends on its batch (per-tensor int8).
      const vectors = await this.encoder.encode(queries, this.encoder.batchIndependent ? undefined : queries.map((_, j) => j));
      seqs.push(...store.add(slice.map((m) => m.record), vectors));
    }
    return seqs;
  }
}

/**
 * Saves `store` as a new version of `root` and makes it current; returns the version. Refused
 * (`MEMORY_CHANGED`) when another writer made a version current since `store` was loaded.
 */
export function publishMemory(store: MemoryStore, root: string): string {
  const base = store.version ?? null;
  const existing = new Set(existsSync(root) ? readdirSync(root) : []);
  const manifest = store.save(root);
  try {
    activateMemoryVersion(root, manifest.memoryVersion, base);
  } catch (error) {
    // Never current, never read: a refused version is removed, so no label outlives an erasure in it.
    if (!existing.has(manifest.memoryVersion)) rmSync(join(root, manifest.memoryVersion), { recursive: true, force: true });
    throw error;
  }
  return manifest.memoryVersion;
}
