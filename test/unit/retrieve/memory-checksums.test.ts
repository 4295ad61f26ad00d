import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { copyBeside, notBareFileNames } from '../../support/damaged-versions.ts';
import { editManifest as editManifestOf, encoder, label, MODEL, refused } from '../../support/memory-files.ts';
import { lowerNormalize } from '../../support/trigram-encoder.ts';

/**
 * The structural checks (memory-consistency.test.ts) cannot tell two files of the same shape
 * apart, nor see damage that leaves the structure intact. Each version's manifest records the
 * size and SHA-256 of records.jsonl and prototypes.hnsw, and open refuses a file that differs.
 * Every version here is written by the real writer, then damaged.
 */


let root: string;
/** Two memories of one shape: three labels of three concepts each, seq 1 retracted (nextSeq 3). */
let memoryA: string;
let memoryB: string;

function twoLabelsLeft(texts: string[], memRoot: string): string {
  const store = MemoryStore.empty(MODEL, lowerNormalize);
  store.add(texts.map((t, i) => label(t, `D${i}`)), texts.map((t) => encoder.vector(t)));
  store.remove([1]);
  return join(memRoot, store.save(memRoot).memoryVersion);
}

before(() => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-memory-checksums-'));
  memoryA = twoLabelsLeft(['heart attack', 'sugar sickness', 'lung fire'], join(root, 'a'));
  memoryB = twoLabelsLeft(['kidney stone', 'brain fog', 'bone ache'], join(root, 'b'));
});
after(() => rmSync(root, { recursive: true, force: true }));

const editManifest = (dir: string, edit: (manifest: Record<string, unknown> & { files: Record<string, string> }) => void) => editManifestOf<Record<string, unknown> & { files: Record<string, string> }>(dir, edit);

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');


/** Refused naming the file, the sha256 the manifest recorded and the one the file has now. */
function refusedAsChanged(dir: string, file: 'records.jsonl' | 'prototypes.hnsw', recordedFrom: string): void {
  const recorded = sha256(join(recordedFrom, file));
  const actual = sha256(join(dir, file));
  assert.notEqual(actual, recorded, 'the test damaged the file');
  refused(dir, new RegExp(`${file.replace('.', '\\.')}`), new RegExp(recorded), new RegExp(actual));
}

test('the undamaged memories open; their manifests record each file’s size and sha256', () => {
  for (const dir of [memoryA, memoryB]) {
    assert.deepEqual(MemoryStore.open(dir, lowerNormalize).list().map((r) => r.seq), [0, 2]);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { checksums?: Record<string, { bytes: number; sha256: string }> };
    for (const [key, file] of [['records', 'records.jsonl'], ['prototypes', 'prototypes.hnsw']] as const) {
      assert.deepEqual(manifest.checksums?.[key], { bytes: statSync(join(dir, file)).size, sha256: sha256(join(dir, file)) }, key);
    }
  }
});

test('prototypes of another memory of the same shape (same nextSeq, same retractions) are refused: its vectors would answer for these records', () => {
  const dir = copyBeside(memoryA);
  copyFileSync(join(memoryB, 'prototypes.hnsw'), join(dir, 'prototypes.hnsw'));
  refusedAsChanged(dir, 'prototypes.hnsw', memoryA);
});

test('records of another memory of the same shape are refused', () => {
  const dir = copyBeside(memoryA);
  copyFileSync(join(memoryB, 'records.jsonl'), join(dir, 'records.jsonl'));
  refusedAsChanged(dir, 'records.jsonl', memoryA);
});

test('one flipped bit in a prototype vector (the HNSW structure intact) is refused', () => {
  const dir = copyBeside(memoryA);
  const file = join(dir, 'prototypes.hnsw');
  const bytes = readFileSync(file);
  // hnswlib's header is 96 bytes; an element's vector starts offsetData (header byte 40) into it.
  const firstVectorByte = 96 + Number(bytes.readBigUInt64LE(40));
  bytes[firstVectorByte]! ^= 1;
  writeFileSync(file, bytes);
  refusedAsChanged(dir, 'prototypes.hnsw', memoryA);
});

test('one changed letter in a record (still valid JSON, same counts) is refused', () => {
  const dir = copyBeside(memoryA);
  const file = join(dir, 'records.jsonl');
  writeFileSync(file, readFileSync(file, 'utf8').replace('heart attack', 'heart attacj'));
  refusedAsChanged(dir, 'records.jsonl', memoryA);
});

test('a file shortened by a partial copy (here only its last newline: every record still parses) is refused with both sizes', () => {
  const dir = copyBeside(memoryA);
  const file = join(dir, 'records.jsonl');
  const size = statSync(file).size;
  writeFileSync(file, readFileSync(file).subarray(0, size - 1));
  refused(dir, /records\.jsonl/, new RegExp(`${size - 1} bytes`), new RegExp(`${size} bytes`));
});

test('a manifest written before checksums opens (its files are checked for shape only)', () => {
  const dir = copyBeside(memoryA);
  editManifest(dir, (m) => delete m.checksums);
  assert.deepEqual(MemoryStore.open(dir, lowerNormalize).list().map((r) => r.seq), [0, 2]);
});

test("files.* naming anything but a bare file name is refused, naming the field (a hand edit cannot reach outside the version's directory)", () => {
  for (const [key, file] of [['records', 'records.jsonl'], ['prototypes', 'prototypes.hnsw']] as const) {
    for (const name of notBareFileNames(memoryA, file)) {
      const dir = copyBeside(memoryA);
      editManifest(dir, (m) => {
        m.files[key] = name;
        delete m.checksums;
      });
      refused(dir, new RegExp(`field 'files\\.${key}'`), /bare file name/);
    }
  }
});
