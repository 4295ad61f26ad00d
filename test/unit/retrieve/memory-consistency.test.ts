import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../../src/kb/errors.ts';
import { HnswIndex, readHnswLabels } from '../../../src/retrieve/hnsw-index.ts';
import { MEMORY_HNSW, MemoryStore } from '../../../src/retrieve/memory-store.ts';
import type { MemoryManifest } from '../../../src/retrieve/memory-manifest.ts';
import type { NewMemoryRecord } from '../../../src/retrieve/memory-record.ts';
import { editManifest as editManifestOf, encoder, label, MODEL, refused } from '../../support/memory-files.ts';
import { lowerNormalize } from '../../support/trigram-encoder.ts';

/**
 * A memory version's three files describe the same labels: the manifest's counts (records,
 * nextSeq, concepts, and surfaces where they are hashes), one records.jsonl line per live seq, and
 * one prototypes.hnsw point per seq ever added (label = seq), deleted exactly where the record was
 * retracted. Each version is written by the real writer, then damaged as a partial copy or a hand
 * edit would, and must be refused (BAD_MEMORY, naming the file and the mismatch) instead of
 * linking with prototypes that have no record, records that have no prototype, or a nextSeq that
 * would hand out a seq already in use.
 */


let root: string;
/** v1: seqs 0-2 live; v2: seq 1 retracted (nextSeq 3); v3: seqs 3 and 4 added (nextSeq 5). */
let v1: string;
let v2: string;
let v3: string;
let hashed: string;

function saveWith(store: MemoryStore, records: NewMemoryRecord[], memRoot: string): string {
  store.add(records, records.map((r) => encoder.vector(r.text)));
  return join(memRoot, store.save(memRoot).memoryVersion);
}

before(() => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-memory-consistency-'));
  const store = MemoryStore.empty(MODEL, lowerNormalize);
  v1 = saveWith(store, [label('heart attack', 'D1'), label('sugar sickness', 'D2'), label('lung fire', 'D3')], join(root, 'mem'));
  store.remove([1]);
  v2 = saveWith(store, [], join(root, 'mem'));
  v3 = saveWith(store, [label('kidney stone', 'D4'), label('brain fog', 'D5')], join(root, 'mem'));
  hashed = saveWith(MemoryStore.empty(MODEL, lowerNormalize, { rawText: false }), [label('heart attack', 'D1'), label('sugar sickness', 'D2'), label('lung fire', 'D3')], join(root, 'hashed'));
});
after(() => rmSync(root, { recursive: true, force: true }));

let copies = 0;
/**
 * A copy of a version directory to damage, its manifest without the files' checksums (as written
 * before them): those would refuse any changed file first (memory-checksums.test.ts), and these
 * shape checks are what guards such a version.
 */
function copyOf(dir: string): string {
  const copy = join(root, `damaged-${copies++}`);
  cpSync(dir, copy, { recursive: true });
  editManifest(copy, (m) => delete m.checksums);
  return copy;
}

/** A manifest as read back, where a hand edit may drop the fields that have defaults. */
type EditableManifest = Omit<MemoryManifest, 'rawText' | 'erasedNotes'> & { rawText?: boolean; erasedNotes?: string[] };


const editManifest = (dir: string, edit: (manifest: EditableManifest) => void) => editManifestOf<EditableManifest>(dir, edit);

function editRecord(dir: string, line: number, edit: (record: Record<string, unknown>) => void): void {
  const file = join(dir, 'records.jsonl');
  const lines = readFileSync(file, 'utf8').split('\n');
  const record = JSON.parse(lines[line - 1]!) as Record<string, unknown>;
  edit(record);
  lines[line - 1] = JSON.stringify(record);
  writeFileSync(file, lines.join('\n'));
}


test('the undamaged versions open, with the prototypes their records name', () => {
  for (const [dir, seqs] of [[v1, [0, 1, 2]], [v2, [0, 2]], [v3, [0, 2, 3, 4]], [hashed, [0, 1, 2]]] as const) {
    const store = MemoryStore.open(dir, lowerNormalize);
    assert.deepEqual(store.list().map((r) => r.seq), seqs);
    assert.deepEqual(store.nearest(encoder.vector('lung fire'), 10).map((n) => n.record.seq).sort(), [...seqs].sort());
  }
});

test('a manifest whose nextSeq is not past every record is refused (the next label would reuse a live seq and its prototype)', () => {
  const dir = copyOf(v1);
  editManifest(dir, (m) => (m.counts.nextSeq = 2));
  refused(dir, /records\.jsonl:3/, /seq 2/, /nextSeq 2/);
});

test('a record whose seq was changed past nextSeq is refused, naming its line', () => {
  const dir = copyOf(v1);
  editRecord(dir, 3, (r) => (r.seq = 7));
  refused(dir, /records\.jsonl:3/, /seq 7/, /nextSeq 3/);
});

test('two records with one seq are refused as such (not as a record count that disagrees)', () => {
  const dir = copyOf(v1);
  editRecord(dir, 3, (r) => (r.seq = 0));
  refused(dir, /records\.jsonl:3/, /seq 0/, /line 1/);
});

test("an older version's prototypes (fewer points than nextSeq) are refused: the newer records would have no prototype", () => {
  const dir = copyOf(v3);
  copyFileSync(join(v2, 'prototypes.hnsw'), join(dir, 'prototypes.hnsw'));
  refused(dir, /prototypes\.hnsw/, /3 prototypes/, /nextSeq 5/);
});

test("a newer version's prototypes (more points than nextSeq) are refused", () => {
  const dir = copyOf(v2);
  copyFileSync(join(v3, 'prototypes.hnsw'), join(dir, 'prototypes.hnsw'));
  refused(dir, /prototypes\.hnsw/, /5 prototypes/, /nextSeq 3/);
});

test("prototypes where a live record's point is deleted are refused (that record would never be found)", () => {
  const dir = copyOf(v1);
  copyFileSync(join(v2, 'prototypes.hnsw'), join(dir, 'prototypes.hnsw'));
  refused(dir, /prototypes\.hnsw/, /seq 1/, /deleted/);
});

test('prototypes where a retracted record still has a live point are refused (it would take a neighbour slot with no record)', () => {
  const dir = copyOf(v2);
  copyFileSync(join(v1, 'prototypes.hnsw'), join(dir, 'prototypes.hnsw'));
  refused(dir, /prototypes\.hnsw/, /seq 1/, /no record/);
});

test('prototypes labelled other than 0..nextSeq-1 are refused (same count, but a record without its point)', () => {
  const dir = copyOf(v1);
  const index = HnswIndex.create(MODEL.dims, 3, MEMORY_HNSW);
  for (const [seq, text] of [[0, 'heart attack'], [1, 'sugar sickness'], [7, 'lung fire']] as const) index.add(encoder.vector(text), seq);
  index.save(join(dir, 'prototypes.hnsw'));
  refused(dir, /prototypes\.hnsw/, /7/);
});

test('records whose concept ids disagree with the manifest count are refused', () => {
  const dir = copyOf(v1);
  editRecord(dir, 3, (r) => (r.ids = ['D1']));
  refused(dir, /records\.jsonl/, /2 concepts/, /manifest says 3/);
});

test('a memory without raw text whose surface hashes disagree with the manifest count is refused', () => {
  const dir = copyOf(hashed);
  const first = JSON.parse(readFileSync(join(dir, 'records.jsonl'), 'utf8').split('\n')[0]!) as { surfaceHash: string };
  editRecord(dir, 3, (r) => (r.surfaceHash = first.surfaceHash));
  refused(dir, /records\.jsonl/, /2 surfaces/, /manifest says 3/);
});

test('what stays allowed: a raw-text memory re-normalized on load (another surface count), a manifest from before rawText and erasedNotes', () => {
  // normalizeName may change between releases; a raw-text memory is re-normalized on load (docs/memory.md).
  assert.equal(MemoryStore.open(v1, () => 'one surface').surfaceCount, 1);
  const dir = copyOf(v2);
  editManifest(dir, (m) => {
    delete m.rawText;
    delete m.erasedNotes;
  });
  assert.deepEqual(MemoryStore.open(dir, lowerNormalize).list().map((r) => r.seq), [0, 2]);
});

test('already refused before: prototypes of other dims, a truncated prototypes file, a missing record', () => {
  const dims = copyOf(v1);
  editManifest(dims, (m) => (m.model.dims = 32));
  assert.throws(() => MemoryStore.open(dims, lowerNormalize), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX' && /prototypes\.hnsw/.test(e.message) && /32/.test(e.message));
  const truncated = copyOf(v1);
  truncateSync(join(truncated, 'prototypes.hnsw'), 200);
  assert.throws(() => MemoryStore.open(truncated, lowerNormalize), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX' && /prototypes\.hnsw/.test(e.message));
  const short = copyOf(v1);
  writeFileSync(join(short, 'records.jsonl'), readFileSync(join(short, 'records.jsonl'), 'utf8').split('\n').slice(0, 2).join('\n'));
  refused(short, /records\.jsonl/, /2 records, manifest says 3/);
});

test('readHnswLabels reads the labels and delete marks hnswlib itself holds', () => {
  const file = join(root, 'labels.hnsw');
  const index = HnswIndex.create(MODEL.dims, 8, MEMORY_HNSW);
  const labels = [0, 5, 2, 100, 3];
  for (const seq of labels) index.add(encoder.vector(`text ${seq}`), seq);
  index.markDeleted(5);
  index.markDeleted(3);
  index.save(file);
  const read = readHnswLabels(file);
  assert.deepEqual([...read.entries()].sort((a, b) => a[0] - b[0]), [[0, false], [2, false], [3, true], [5, true], [100, false]]);
  const loaded = HnswIndex.load(file, MODEL.dims, 10, { checksummed: false });
  assert.equal(loaded.size, read.size);
  for (const [seq, deleted] of read) assert.equal((() => { try { loaded.vector(seq); return false; } catch { return true; } })(), deleted, `label ${seq}`);
});
