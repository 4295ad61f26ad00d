import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { HnswIndex } from '../../../src/retrieve/hnsw-index.ts';

// An HNSW file no checksum vouches for (a memory version or an index written before checksums)
// is read by hnswlib, which trusts its header and links: damaged, it crashed the process (SIGSEGV)
// at load or at the first search, or loaded and answered from garbage. Each damaged copy of a real
// file is loaded, searched and added to in a child process, so that a crash fails this test
// instead of ending the test run; each must be refused with BAD_INDEX naming the file.

const DIMS = 8;
let dir: string;
let valid: Buffer;
const vector = (seed: number) => Float32Array.from({ length: DIMS }, (_, j) => Math.sin(seed * 7 + j));

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cuilink-hnsw-layout-'));
  const index = HnswIndex.create(DIMS, 10, { m: 16, efConstruction: 100, efSearch: 50, randomSeed: 1 });
  for (let i = 0; i < 5; i++) index.add(vector(i), i);
  index.save(join(dir, 'valid.hnsw'));
  valid = readFileSync(join(dir, 'valid.hnsw'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Loads, searches and adds to each file in a child process; one JSON line of outcome a file, in order. */
function loadEach(files: string[], checksummed: boolean): { lines: { file: string; outcome: string; message?: string }[]; status: number | null; signal: string | null } {
  const script = `
    const { HnswIndex } = await import(${JSON.stringify(pathToFileURL('src/retrieve/hnsw-index.ts').href)});
    const vector = (seed) => Float32Array.from({ length: ${DIMS} }, (_, j) => Math.sin(seed * 7 + j));
    for (const file of process.argv.slice(1)) {
      try {
        const index = HnswIndex.load(file, ${DIMS}, 50, { checksummed: ${checksummed} });
        index.search(vector(0), 3);
        index.add(vector(9), 9);
        console.log(JSON.stringify({ file, outcome: 'loaded' }));
      } catch (error) {
        console.log(JSON.stringify({ file, outcome: error.code ?? 'no code', message: error.message }));
      }
    }`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, ...files], { encoding: 'utf8' });
  return { lines: child.stdout.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l)), status: child.status, signal: child.signal };
}

function damaged(name: string, edit: (bytes: Buffer) => Buffer | void): string {
  const bytes = Buffer.from(valid);
  const file = join(dir, `${name}.hnsw`);
  writeFileSync(file, edit(bytes) ?? bytes);
  return file;
}

test('an HNSW file whose header or links do not add up is refused with BAD_INDEX naming it: hnswlib never reads it', () => {
  const files = [
    // The entry point past the elements, and a top level the entry point lacks: SIGSEGV at the first search.
    damaged('entry-point', (b) => void b.writeUInt32LE(5000, 52)),
    damaged('top-level', (b) => void b.writeInt32LE(5, 48)),
    // A level-0 neighbour id past the elements (offset 96 + 4: element 0's first link): SIGSEGV at the first search.
    damaged('link-id', (b) => void b.writeUInt32LE(2_000_000, 100)),
    // maxM not M: loaded and searched with the wrong list sizes; maxM0 1: hnswlib's own error on add, no code.
    damaged('max-m', (b) => void b.writeBigUInt64LE(100_000n, 56)),
    damaged('max-m0', (b) => void b.writeBigUInt64LE(1n, 64)),
    damaged('capacity', (b) => void b.writeBigUInt64LE(2n ** 40n, 8)),
    damaged('gzipped', (b) => gzipSync(b)),
  ];
  const { lines, status, signal } = loadEach(files, false);
  assert.deepEqual({ status, signal }, { status: 0, signal: null }, `the child ended after ${lines.map((l) => l.file.split('/').pop()).join(', ')}`);
  for (const [i, file] of files.entries()) {
    const line = lines[i];
    assert.equal(line?.outcome, 'BAD_INDEX', `${file}: ${JSON.stringify(line)}`);
    assert.ok(line.message!.includes(file) && /damaged, or no hnswlib index/.test(line.message!), line.message);
  }
});

test('the undamaged file loads; a checksummed one is not read for its links (its digest vouches for them)', () => {
  const { lines, status } = loadEach([join(dir, 'valid.hnsw')], false);
  assert.equal(status, 0);
  assert.deepEqual(lines.map((l) => l.outcome), ['loaded']);
  const header = loadEach([damaged('header-checked', (b) => void b.writeUInt32LE(5000, 52))], true);
  assert.deepEqual(header.lines.map((l) => l.outcome), ['BAD_INDEX'], 'the header is checked whatever vouches for the file');
});
