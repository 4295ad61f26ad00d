import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import type { NewMemoryRecord } from '../../../src/retrieve/memory-record.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

const encoder = new TrigramEncoder();
const MODEL = { id: 'test-trigram-encoder', sha256: 'd'.repeat(64), dims: encoder.dims };
const records: NewMemoryRecord[] = [{ text: 'heart attack', label: 'Disease', ids: ['MESH:D009203'], source: 'test', time: 1 }];

function memory(): MemoryStore {
  const store = MemoryStore.empty(MODEL, lowerNormalize);
  store.add(records, records.map((r) => encoder.vector(r.text)));
  return store;
}

test("saving a memory version leaves another host's staging of the same version alone, even under this process's pid", () => {
  // Two hosts on a shared volume write the same version with the same pid (containers start at 1).
  const root = mkdtempSync(join(tmpdir(), 'cuilink-memory-staging-'));
  try {
    const version = memory().save(join(root, 'probe')).memoryVersion;
    const shared = join(root, 'mem');
    const theirs = join(shared, `.building-${version}-${process.pid}`);
    mkdirSync(theirs, { recursive: true });
    writeFileSync(join(theirs, 'records.jsonl'), 'being written on the other host\n');
    const manifest = memory().save(shared);
    assert.equal(manifest.memoryVersion, version);
    assert.ok(existsSync(join(theirs, 'records.jsonl')), 'the other writer keeps its staging');
    assert.equal(MemoryStore.open(join(shared, version), lowerNormalize).size, 1);
    assert.deepEqual(readdirSync(shared).sort(), [`.building-${version}-${process.pid}`, version]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a memory version whose write fails leaves no staging directory (it holds mention text) and the error is rethrown', () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-memory-staging-'));
  try {
    const version = memory().save(join(root, 'probe')).memoryVersion;
    const target = join(root, 'mem');
    mkdirSync(target);
    // A dangling link where the version goes: existsSync says no version is there, and the last
    // step (renaming the staged directory onto it) fails after every file was written.
    symlinkSync(join(root, 'nowhere'), join(target, version));
    assert.throws(() => memory().save(target), (error: NodeJS.ErrnoException) => error.code === 'ENOTDIR');
    assert.deepEqual(readdirSync(target), [version], 'no .building-* directory is left behind');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
