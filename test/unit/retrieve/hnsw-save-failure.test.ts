import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, truncateSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HnswIndex, checkHnswFileWhole } from '../../../src/retrieve/hnsw-index.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { TrigramEncoder } from '../../support/trigram-encoder.ts';

const PARAMS = { m: 16, efConstruction: 200, efSearch: 64, randomSeed: 7 };

function smallIndex(): HnswIndex {
  const encoder = new TrigramEncoder();
  const index = HnswIndex.create(encoder.dims, 16, PARAMS);
  ['heart attack', 'myocardial infarction', 'seizure', 'fever'].forEach((name, i) => index.add(encoder.vector(name), i));
  return index;
}

// hnswlib writes with a C++ ofstream and never checks it: a full disk used to leave a cut-short
// file and no error, which an index build or a memory version then recorded (checksum and all) as whole.
test('an HNSW index saved to a full disk is an error (the kernel\'s ENOSPC through /dev/full), not a silently cut-short file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-hnsw-full-'));
  try {
    const file = join(dir, 'names.hnsw');
    symlinkSync('/dev/full', file);
    assert.throws(() => smallIndex().save(file), (error: unknown) => error instanceof CuilinkError && error.code === 'WRITE_INCOMPLETE' && error.message.includes(file) && !error.message.includes('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a whole HNSW file passes the check; one cut short by a byte fails it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-hnsw-whole-'));
  try {
    const file = join(dir, 'names.hnsw');
    smallIndex().save(file);
    checkHnswFileWhole(file);
    truncateSync(file, statSync(file).size - 1);
    assert.throws(() => checkHnswFileWhole(file), (error: unknown) => error instanceof CuilinkError && error.code === 'WRITE_INCOMPLETE');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
