import { createHash, createHmac, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { syncDirectory, writeFileDurably } from '../kb/durable-file.ts';
import { InputError } from '../kb/errors.ts';
import { digestOf, fileDigest } from '../kb/file-digest.ts';
import { builderTag } from './abandoned-builds.ts';
import { HnswIndex } from './hnsw-index.ts';
import { checkFileChecksum, checkPrototypes } from './memory-consistency.ts';
import { MEMORY_FORMAT_VERSION, MEMORY_MANIFEST_FILE, readMemoryManifest, type MemoryManifest } from './memory-manifest.ts';
import { parseMemoryRecord, type MemoryRecord, type NewMemoryRecord } from './memory-record.ts';
import { readMemoryRecords } from './memory-records-file.ts';
import { currentMemoryVersion } from './memory-root.ts';

export interface MemoryModel {
  id: string;
  sha256: string;
  dims: number;
}

/** How a memory keeps its labels: with raw text (the default) or only keyed hashes (docs/memory.md). */
export interface MemoryMode {
  /** false: records hold no mention text, context or note id (manifest `rawText: false`). */
  rawText?: boolean;
}

/** Memory prototypes are few next to KB names: a denser graph costs little and keeps recall high. */
export const MEMORY_HNSW = { m: 16, efConstruction: 200, efSearch: 64, randomSeed: 7 };
const RECORDS_FILE = 'records.jsonl';
const PROTOTYPES_FILE = 'prototypes.hnsw';

/**
 * The labelled-mention memory: (a) an exact-surface table, normalized mention text → per-concept
 * label counts, and (b) dense prototypes, each record's bi-encoder query vector in an HNSW graph
 * labelled by the record's `seq`. A loaded snapshot is never changed; `cuilink memory` and the
 * memory updater change a private copy and `save` it as a new version (memory-root.ts).
 *
 * Without raw text (`rawText: false`) the table's keys are HMAC-SHA256 hashes of the normalized
 * surfaces under the memory's salt and records hold no text: every lookup hashes the normalized
 * mention the same way, so the linker's votes are the same as with raw text.
 */
export class MemoryStore {
  readonly model: MemoryModel;
  private current: MemoryManifest | undefined;
  private readonly normalize: (s: string) => string;
  private readonly records = new Map<number, MemoryRecord>();
  private readonly surfaces = new Map<string, Map<string, number>>();
  private readonly conceptCounts = new Map<string, number>();
  private hnsw: HnswIndex;
  private nextSeq: number;
  private readonly erased: Set<string>;
  /** The HMAC key (hex) of a memory without raw text; undefined for a raw-text memory. */
  private readonly hashSalt: string | undefined;
  private readonly hmacKey: Buffer | undefined;
  /** forgetConcepts dropped labels: this copy is not the memory any more and is never saved. */
  private forgotten = false;

  private constructor(model: MemoryModel, normalize: (s: string) => string, hnsw: HnswIndex, manifest: MemoryManifest | undefined, hashSalt: string | undefined) {
    this.model = model;
    this.normalize = normalize;
    this.hnsw = hnsw;
    this.current = manifest;
    this.nextSeq = manifest?.counts.nextSeq ?? 0;
    this.erased = new Set(manifest?.erasedNotes ?? []);
    this.hashSalt = hashSalt;
    this.hmacKey = hashSalt === undefined ? undefined : Buffer.from(hashSalt, 'hex');
  }

  /** A new memory; with `rawText: false` it draws its random hash salt now (kept in every version's manifest). */
  static empty(model: MemoryModel, normalize: (s: string) => string, mode: MemoryMode = {}): MemoryStore {
    const salt = mode.rawText === false ? randomBytes(32).toString('hex') : undefined;
    return new MemoryStore(model, normalize, HnswIndex.create(model.dims, 1024, MEMORY_HNSW), undefined, salt);
  }

  /** Loads a memory version directory (manifest.json, records.jsonl, prototypes.hnsw), refusing files that disagree (BAD_MEMORY). */
  static open(dir: string, normalize: (s: string) => string): MemoryStore {
    const manifest = readMemoryManifest(dir);
    const prototypes = join(dir, manifest.files.prototypes);
    // Checked before loading: a changed file is reported as such, not as whatever it breaks.
    checkFileChecksum(prototypes, manifest.checksums?.prototypes);
    const hnsw = HnswIndex.load(prototypes, manifest.model.dims, manifest.hnsw.efSearch, { checksummed: manifest.checksums !== undefined });
    const store = new MemoryStore(manifest.model, normalize, hnsw, manifest, manifest.rawText ? undefined : manifest.hashSalt);
    const file = join(dir, manifest.files.records);
    for (const record of readMemoryRecords(file, manifest.checksums?.records, store.nextSeq, store.rawText)) store.index(record);
    const { counts } = manifest;
    if (store.records.size !== counts.records) throw new InputError(`${file}: ${store.records.size} records, manifest says ${counts.records}`, 'BAD_MEMORY');
    if (store.conceptCounts.size !== counts.concepts) throw new InputError(`${file}: ${store.conceptCounts.size} concepts, manifest says ${counts.concepts}`, 'BAD_MEMORY');
    // Raw surfaces are normalized again on load (normalizeName may have changed since the save): only hashes must agree.
    if (!store.rawText && store.surfaces.size !== counts.surfaces) throw new InputError(`${file}: ${store.surfaces.size} surfaces, manifest says ${counts.surfaces}`, 'BAD_MEMORY');
    checkPrototypes(prototypes, counts.nextSeq, store.records);
    return store;
  }

  /** The version this store was loaded from or last saved as; undefined for an unsaved new memory. */
  get manifest(): MemoryManifest | undefined {
    return this.current;
  }

  get version(): string | undefined {
    return this.current?.memoryVersion;
  }

  get size(): number {
    return this.records.size;
  }

  get surfaceCount(): number {
    return this.surfaces.size;
  }

  /** Whether records keep mention text, context and note ids (false: keyed hashes only). */
  get rawText(): boolean {
    return this.hmacKey === undefined;
  }

  /** Live records, oldest first. */
  list(): MemoryRecord[] {
    return [...this.records.values()].sort((a, b) => a.seq - b.seq);
  }

  record(seq: number): MemoryRecord | undefined {
    return this.records.get(seq);
  }

  /** The surface-table key of a mention text: its normalized form, or without raw text that form's keyed hash. */
  surfaceKey(text: string): string {
    const normalized = this.normalize(text);
    return this.hmacKey === undefined ? normalized : keyedHash(this.hmacKey, 'surface', normalized);
  }

  /** The surface-table key of a record (what `surfaceKey` gives for its mention text). */
  recordSurfaceKey(record: MemoryRecord): string {
    return record.surfaceHash !== undefined ? record.surfaceHash : this.normalize(record.text);
  }

  /** How this memory names a note in its erase list (SHA-256, or without raw text the keyed hash its records hold). */
  noteKey(noteId: string): string {
    return this.hmacKey === undefined ? noteIdHash(noteId) : keyedHash(this.hmacKey, 'note', noteId);
  }

  /** `noteKey` of a record's note; null for a label of no note. */
  recordNoteKey(record: MemoryRecord): string | null {
    if (record.surfaceHash !== undefined) return record.noteHash;
    return record.noteId === null ? null : noteIdHash(record.noteId);
  }

  /** Live records of these notes (matched by note key, so it works without raw text too). */
  recordsOfNotes(noteIds: Iterable<string>): MemoryRecord[] {
    const keys = new Set([...noteIds].map((id) => this.noteKey(id)));
    return this.recordsOfNoteKeys(keys);
  }

  /** Label counts per concept id for a mention text (normalized like KB names); empty when unseen. */
  surfaceCounts(text: string): ReadonlyMap<string, number> {
    return this.surfaces.get(this.surfaceKey(text)) ?? EMPTY;
  }

  /** How many live labels name a concept: the frequency prior. */
  conceptCount(id: string): number {
    return this.conceptCounts.get(id) ?? 0;
  }

  get maxConceptCount(): number {
    let max = 0;
    for (const n of this.conceptCounts.values()) if (n > max) max = n;
    return max;
  }

  /** Nearest prototypes of a query vector, best first, with their records. */
  nearest(vector: Float32Array, k: number): { record: MemoryRecord; similarity: number }[] {
    if (this.records.size === 0) return [];
    const out: { record: MemoryRecord; similarity: number }[] = [];
    for (const n of this.hnsw.search(vector, Math.min(k, this.records.size))) {
      const record = this.records.get(n.label);
      if (record) out.push({ record, similarity: n.similarity });
    }
    return out;
  }

  isSurface(record: MemoryRecord, text: string): boolean {
    return this.recordSurfaceKey(record) === this.surfaceKey(text);
  }

  /** Adds labelled mentions with their query vectors; returns their seqs. */
  add(records: readonly NewMemoryRecord[], vectors: readonly Float32Array[]): number[] {
    if (records.length !== vectors.length) throw new InputError(`${records.length} memory records but ${vectors.length} vectors`, 'BAD_MEMORY');
    const needed = this.nextSeq + records.length;
    if (needed > this.hnsw.capacity) this.hnsw.resize(Math.max(needed, this.hnsw.capacity * 2));
    const seqs: number[] = [];
    records.forEach((r, i) => {
      const record = this.toStored(parseMemoryRecord({ ...r, seq: this.nextSeq }, 'memory record'));
      const vector = vectors[i]!;
      if (vector.length !== this.model.dims) throw new InputError(`memory vector has ${vector.length} dims, the memory's model ${this.model.dims}`, 'BAD_MEMORY');
      this.hnsw.add(vector, record.seq);
      this.index(record);
      seqs.push(record.seq);
      this.nextSeq++;
    });
    return seqs;
  }

  /** Retracts labels; their prototypes are hidden from search. Returns the records removed. */
  remove(seqs: Iterable<number>): MemoryRecord[] {
    const removed: MemoryRecord[] = [];
    for (const seq of seqs) {
      const record = this.records.get(seq);
      if (!record) continue;
      this.records.delete(seq);
      this.hnsw.markDeleted(seq);
      const key = this.recordSurfaceKey(record);
      const counts = this.surfaces.get(key)!;
      for (const id of record.ids) {
        decrement(counts, id);
        decrement(this.conceptCounts, id);
      }
      if (counts.size === 0) this.surfaces.delete(key);
      removed.push(record);
    }
    return removed;
  }

  /**
   * Drops every label of the concepts `forget` names, as if they had never been learned: a record
   * left with no id leaves (its prototype hidden from search), a composite keeps its other ids.
   * For a linker's private copy that must not know some concepts (eval --hold-out): such a copy
   * is never saved. Returns how many labels were dropped.
   */
  forgetConcepts(forget: (id: string) => boolean): number {
    const gone: number[] = [];
    let dropped = 0;
    for (const record of this.records.values()) {
      const kept = record.ids.filter((id) => !forget(id));
      if (kept.length === record.ids.length) continue;
      dropped += record.ids.length - kept.length;
      this.forgotten = true;
      if (kept.length === 0) {
        gone.push(record.seq);
        continue;
      }
      const counts = this.surfaces.get(this.recordSurfaceKey(record))!;
      for (const id of record.ids) {
        if (kept.includes(id)) continue;
        decrement(counts, id);
        decrement(this.conceptCounts, id);
      }
      this.records.set(record.seq, { ...record, ids: kept });
    }
    this.remove(gone);
    return dropped;
  }

  /**
   * Erases every label of these notes (a patient's right to erasure): their records leave the
   * memory, and the notes are remembered by hash so that no later learner takes them in again.
   */
  erase(noteIds: Iterable<string>): MemoryRecord[] {
    const keys = new Set([...noteIds].map((id) => this.noteKey(id)));
    for (const key of keys) this.erased.add(key);
    return this.remove(this.recordsOfNoteKeys(keys).map((r) => r.seq));
  }

  /** Whether a note's labels were erased from this memory (the memory updater skips its gold). */
  isErased(noteId: string): boolean {
    return this.erased.size > 0 && this.erased.has(this.noteKey(noteId));
  }

  /**
   * Writes this memory as a new version directory under `root` (staged, then renamed: a reader
   * never sees a partial version) and returns its manifest. `CURRENT` is not touched here.
   */
  save(root: string): MemoryManifest {
    if (this.forgotten) throw new InputError(`${root}: this memory copy forgot some concepts' labels (an evaluation's copy): it is never saved`, 'BAD_MEMORY');
    this.refuseMixedModes(root);
    const parent = this.current;
    // Records hold mention text (PHI): only the owner may read a version (docs/memory.md).
    mkdirSync(root, { recursive: true, mode: 0o700 });
    const lines = this.list().map((r) => JSON.stringify(r)).join('\n');
    const body = lines === '' ? '' : `${lines}\n`;
    const sequence = (parent?.sequence ?? 0) + 1;
    const hash = createHash('sha256').update(parent?.memoryVersion ?? '').update('\u0000').update(body);
    // An erasure that removed no record (labels not learned yet) is still a new version.
    if (this.erased.size > 0) hash.update('\u0000').update([...this.erased].sort().join(','));
    const digest = hash.digest('hex');
    const version = `${String(sequence).padStart(6, '0')}-${digest.slice(0, 10)}`;
    const manifest: MemoryManifest = {
      format: 'cuilink-memory',
      formatVersion: MEMORY_FORMAT_VERSION,
      memoryVersion: version,
      sequence,
      parent: parent?.memoryVersion ?? null,
      createdAt: new Date().toISOString(),
      model: this.model,
      hnsw: { m: MEMORY_HNSW.m, efConstruction: MEMORY_HNSW.efConstruction, efSearch: MEMORY_HNSW.efSearch },
      counts: { records: this.records.size, nextSeq: this.nextSeq, surfaces: this.surfaces.size, concepts: this.conceptCounts.size },
      files: { records: RECORDS_FILE, prototypes: PROTOTYPES_FILE },
      erasedNotes: [...this.erased].sort(),
      rawText: this.rawText,
      ...(this.hashSalt === undefined ? {} : { hashSalt: this.hashSalt }),
    };
    const final = join(root, version);
    if (existsSync(final)) return (this.current = readMemoryManifest(final));
    const staging = join(root, `.building-${version}-${builderTag()}`);
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { mode: 0o700 });
    try {
      // All flushed before save returns: CURRENT, named next, must never name a version a power cut cut short.
      const records = Buffer.from(body, 'utf8');
      writeFileDurably(join(staging, RECORDS_FILE), records, { mode: 0o600 });
      this.hnsw.save(join(staging, PROTOTYPES_FILE));
      chmodSync(join(staging, PROTOTYPES_FILE), 0o600);
      manifest.checksums = { records: digestOf(records), prototypes: fileDigest(join(staging, PROTOTYPES_FILE)) };
      writeFileDurably(join(staging, MEMORY_MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
      syncDirectory(staging);
      renameSync(staging, final);
      syncDirectory(root);
    } catch (error) {
      // The staged records hold mention text (PHI): a failed write (disk full, a bad root) must not leave them behind.
      rmSync(staging, { recursive: true, force: true });
      throw error;
    }
    this.current = manifest;
    return manifest;
  }

  /**
   * A memory keeps raw text or does not, in every version: a writer whose copy differs from the
   * version CURRENT names (another mode, or another salt: its hashes would not match) is refused
   * before it writes. A CURRENT that cannot be read is left to the readers to report.
   */
  private refuseMixedModes(root: string): void {
    let current: MemoryManifest;
    try {
      const version = currentMemoryVersion(root);
      if (version === undefined || version === this.current?.memoryVersion) return;
      current = readMemoryManifest(join(root, version));
    } catch {
      return;
    }
    if (current.rawText !== this.rawText) throw mixedModes(root, current.rawText);
    if (!this.rawText && current.hashSalt !== this.hashSalt) throw new InputError(`${root}: its memory hashes surfaces with another salt than this writer's copy (created beside it): a memory never mixes two; write to a new root`, 'MEMORY_MODE_MISMATCH');
  }

  /** A new record as this memory keeps it: as given, or without raw text as its hashes. */
  private toStored(record: MemoryRecord): MemoryRecord {
    if (this.hmacKey === undefined || record.text === undefined) return record;
    const { seq, label, ids, source, time, mentionId } = record;
    return { seq, label, ids, source, time, mentionId, surfaceHash: this.surfaceKey(record.text), noteHash: record.noteId === null ? null : this.noteKey(record.noteId) };
  }

  private recordsOfNoteKeys(keys: ReadonlySet<string>): MemoryRecord[] {
    if (keys.size === 0) return [];
    return this.list().filter((r) => {
      const key = this.recordNoteKey(r);
      return key !== null && keys.has(key);
    });
  }

  private index(record: MemoryRecord): void {
    this.records.set(record.seq, record);
    const key = this.recordSurfaceKey(record);
    let counts = this.surfaces.get(key);
    if (!counts) this.surfaces.set(key, (counts = new Map()));
    for (const id of record.ids) {
      counts.set(id, (counts.get(id) ?? 0) + 1);
      this.conceptCounts.set(id, (this.conceptCounts.get(id) ?? 0) + 1);
    }
  }
}

const EMPTY: ReadonlyMap<string, number> = new Map();

/**
 * HMAC-SHA256 (hex) under a memory's salt, with a domain tag so a surface and a note id never
 * share a hash. Keyed rather than a plain SHA-256: short surfaces and note ids are few enough to
 * hash a dictionary of them, so a plain hash would name them to anyone holding the records; with
 * the key a guess must also know the memory's salt (kept in its manifest, 0600 like the records).
 */
function keyedHash(key: Buffer, domain: 'surface' | 'note', value: string): string {
  return createHmac('sha256', key).update(domain).update('\u0000').update(value).digest('hex');
}

/** The one-line refusal when a writer's mode differs from its memory's (`rawText` of the memory on disk). */
export function mixedModes(root: string, memoryRawText: boolean): InputError {
  return memoryRawText
    ? new InputError(`${root}: this memory keeps raw text (manifest rawText true); --no-raw-text cannot be mixed into it: start a new memory root with --no-raw-text`, 'MEMORY_MODE_MISMATCH')
    : new InputError(`${root}: this memory keeps no raw text (manifest rawText false); a writer with raw text cannot be mixed into it`, 'MEMORY_MODE_MISMATCH');
}

/** How a version's erase list and records name a note (for readers of a version's files: `cuilink memory erase`). */
export function noteKeyFor(manifest: MemoryManifest, noteId: string): string {
  return manifest.rawText ? noteIdHash(noteId) : keyedHash(Buffer.from(manifest.hashSalt!, 'hex'), 'note', noteId);
}

/** A note id as the erase list keeps it: hashed, so the list itself names no note. */
export function noteIdHash(noteId: string): string {
  return createHash('sha256').update(noteId).digest('hex');
}

function decrement(map: Map<string, number>, key: string): void {
  const n = (map.get(key) ?? 0) - 1;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}
