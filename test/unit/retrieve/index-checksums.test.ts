import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../../src/kb/errors.ts';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { readIndexManifest } from '../../../src/retrieve/index-manifest.ts';
import { activateIndexVersion, CURRENT_VERSION_FILE } from '../../../src/retrieve/index-versions.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { copyBeside, notBareFileNames } from '../../support/damaged-versions.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

/**
 * The counts an index's manifest records cannot tell two files of the same shape apart (the HNSW
 * graph of another index of the same names), nor see damage that leaves the structure intact. Each
 * index's manifest records the size and SHA-256 of its files; open and `index activate` refuse a
 * file that differs. Every index here is written by the real builder, then damaged.
 */

const FILES = { concepts: 'concepts.jsonl', names: 'names.json', hnsw: 'names.hnsw' } as const;
type FileKey = keyof typeof FILES;

let root: string;
/** Two indexes of one shape: the same concepts and names, graphs built from other random seeds. */
let indexA: string;
let indexB: string;

async function build(outDir: string, randomSeed: number): Promise<void> {
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture.jsonl'], kbChecksum: 'a'.repeat(64), encoder: new TrigramEncoder(),
    model: { path: 'models/test', sha256: 'b'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir, hnsw: { randomSeed }, progress: false,
  });
}

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-index-checksums-'));
  indexA = join(root, 'a');
  indexB = join(root, 'b');
  await build(indexA, 100);
  await build(indexB, 7);
});
after(() => rmSync(root, { recursive: true, force: true }));

type EditableManifest = Record<string, unknown> & { files: Record<string, string> };
function editManifest(dir: string, edit: (manifest: EditableManifest) => void): void {
  const file = join(dir, 'manifest.json');
  const manifest = JSON.parse(readFileSync(file, 'utf8')) as EditableManifest;
  edit(manifest);
  writeFileSync(file, JSON.stringify(manifest));
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

async function refused(dir: string, ...patterns: RegExp[]): Promise<void> {
  await assert.rejects(LinkIndex.open(dir, lowerNormalize), (e: unknown) => {
    assert.ok(e instanceof InputError, `an InputError, not ${String(e)}`);
    assert.equal(e.code, 'BAD_INDEX');
    for (const pattern of patterns) assert.match(e.message, pattern);
    return true;
  });
}

/** Refused naming the file, the sha256 the manifest recorded and the one the file has now. */
async function refusedAsChanged(dir: string, key: FileKey): Promise<void> {
  const recorded = sha256(join(indexA, FILES[key]));
  const actual = sha256(join(dir, FILES[key]));
  assert.notEqual(actual, recorded, 'the test damaged the file');
  await refused(dir, new RegExp(FILES[key].replace('.', '\\.')), new RegExp(recorded), new RegExp(actual));
}

test('the undamaged indexes open; their manifests record each file’s size and sha256', async () => {
  for (const dir of [indexA, indexB]) {
    assert.equal((await LinkIndex.open(dir, lowerNormalize)).concepts.length, FIXTURE_CONCEPTS.length);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { checksums?: Record<string, { bytes: number; sha256: string }> };
    for (const [key, file] of Object.entries(FILES)) {
      assert.deepEqual(manifest.checksums?.[key], { bytes: statSync(join(dir, file)).size, sha256: sha256(join(dir, file)) }, key);
    }
  }
});

test('the HNSW graph of another index of the same shape (same names, same counts) is refused', async () => {
  assert.notEqual(sha256(join(indexA, FILES.hnsw)), sha256(join(indexB, FILES.hnsw)), 'the two graphs differ');
  const dir = copyBeside(indexA);
  copyFileSync(join(indexB, FILES.hnsw), join(dir, FILES.hnsw));
  await refusedAsChanged(dir, 'hnsw');
});

test('one flipped bit in a name vector (the HNSW structure intact) is refused', async () => {
  const dir = copyBeside(indexA);
  const file = join(dir, FILES.hnsw);
  const bytes = readFileSync(file);
  // hnswlib's header is 96 bytes; an element's vector starts offsetData (header byte 40) into it.
  const firstVectorByte = 96 + Number(bytes.readBigUInt64LE(40));
  bytes[firstVectorByte]! ^= 1;
  writeFileSync(file, bytes);
  await refusedAsChanged(dir, 'hnsw');
});

test('one changed letter in a concept or a name (still valid JSON, same counts) is refused', async () => {
  for (const key of ['concepts', 'names'] as const) {
    const dir = copyBeside(indexA);
    const file = join(dir, FILES[key]);
    const text = readFileSync(file, 'utf8');
    const name = FIXTURE_CONCEPTS[0]!.name;
    assert.ok(text.includes(name));
    writeFileSync(file, text.replace(name, `${name.slice(0, -1)}${name.endsWith('x') ? 'y' : 'x'}`));
    await refusedAsChanged(dir, key);
  }
});

test('a file cut short by a partial copy is refused with both sizes (here concepts.jsonl without its last newline: every concept still parses)', async () => {
  for (const key of ['concepts', 'hnsw'] as const) {
    const dir = copyBeside(indexA);
    const file = join(dir, FILES[key]);
    const bytes = readFileSync(file);
    writeFileSync(file, bytes.subarray(0, bytes.length - 1));
    await refused(dir, new RegExp(FILES[key].replace('.', '\\.')), new RegExp(`${bytes.length - 1} bytes`), new RegExp(`recorded ${bytes.length} bytes`));
  }
});

test('an index built before checksums (no checksums in its manifest) still opens, and says its files were not verified', async () => {
  const dir = copyBeside(indexA);
  editManifest(dir, (m) => delete m.checksums);
  const old = await LinkIndex.open(dir, lowerNormalize);
  assert.equal(old.concepts.length, FIXTURE_CONCEPTS.length);
  assert.equal(old.filesVerified, false);
  assert.equal((await LinkIndex.open(indexA, lowerNormalize)).filesVerified, true);
});

test('an index built before checksums: a names.json of the wrong structure (same counts) is refused as BAD_INDEX naming the file and the key, not served', async () => {
  const original = JSON.parse(readFileSync(join(indexA, FILES.names), 'utf8')) as { names: unknown[]; conceptIndexOf: unknown[] };
  const last = original.names.length - 1;
  const damages: [string, (t: { names: unknown[]; conceptIndexOf: unknown[] }) => unknown, RegExp][] = [
    ['an owner past the concepts', (t) => ({ ...t, conceptIndexOf: t.conceptIndexOf.map((o, i) => (i === last ? FIXTURE_CONCEPTS.length : o)) }), new RegExp(`'conceptIndexOf\\[${last}\\]' is ${FIXTURE_CONCEPTS.length}, not a concept index`)],
    ['a negative owner', (t) => ({ ...t, conceptIndexOf: t.conceptIndexOf.map((o, i) => (i === 0 ? -1 : o)) }), /'conceptIndexOf\[0\]' is -1, not a concept index/],
    ['a fractional owner', (t) => ({ ...t, conceptIndexOf: t.conceptIndexOf.map((o, i) => (i === 0 ? 0.5 : o)) }), /'conceptIndexOf\[0\]' is 0.5, not a concept index/],
    ['an owner as a string', (t) => ({ ...t, conceptIndexOf: t.conceptIndexOf.map((o, i) => (i === 0 ? '0' : o)) }), /'conceptIndexOf\[0\]' is "0", not a concept index/],
    ['a name that is no string', (t) => ({ ...t, names: t.names.map((n, i) => (i === 1 ? 42 : n)) }), /'names\[1\]' is not a string/],
    ['no name list', (t) => ({ conceptIndexOf: t.conceptIndexOf }), /'names' is not an array/],
    ['no object at all', () => null, /not a JSON object/],
  ];
  for (const [what, damage, pattern] of damages) {
    const dir = copyBeside(indexA);
    editManifest(dir, (m) => delete m.checksums);
    writeFileSync(join(dir, FILES.names), JSON.stringify(damage(structuredClone(original))));
    await refused(dir, /names\.json/, pattern).catch((error: Error) => assert.fail(`${what}: ${error.message}`));
  }
});

test("files.* naming anything but a bare file name is refused, naming the field and the value (a hand edit cannot reach outside the index's directory)", async () => {
  for (const [key, file] of Object.entries(FILES)) {
    for (const name of notBareFileNames(indexA, file)) {
      const dir = copyBeside(indexA);
      editManifest(dir, (m) => {
        m.files[key] = name;
      });
      const patterns = [new RegExp(`field 'files\\.${key}'`), /bare file name/, new RegExp(JSON.stringify(name).replace(/[.\\/]/g, '\\$&'))];
      await refused(dir, ...patterns);
      assert.throws(() => readIndexManifest(dir), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX' && patterns.every((p) => p.test(e.message)));
    }
  }
});

test('index activate refuses a version whose files changed since it was built, and CURRENT stays as it was', () => {
  const versions = mkdtempSync(join(root, 'root-'));
  cpSync(indexA, join(versions, 'good'), { recursive: true });
  cpSync(indexA, join(versions, 'damaged'), { recursive: true });
  copyFileSync(join(indexB, FILES.hnsw), join(versions, 'damaged', FILES.hnsw));
  activateIndexVersion(versions, 'good');
  assert.throws(
    () => activateIndexVersion(versions, 'damaged'),
    (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX' && /names\.hnsw/.test(e.message) && new RegExp(sha256(join(indexA, FILES.hnsw))).test(e.message),
  );
  assert.equal(readFileSync(join(versions, CURRENT_VERSION_FILE), 'utf8'), 'good\n');
});
