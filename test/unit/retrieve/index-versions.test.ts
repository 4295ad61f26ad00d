import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { activateIndexVersion, CURRENT_VERSION_FILE, currentVersionTemporary, listIndexVersions, resolveIndexDir } from '../../../src/retrieve/index-versions.ts';
import { InputError } from '../../../src/kb/errors.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

// Two real index versions of different KBs under one root, as the index-build Job leaves them.
let root: string;
const encoder = new TrigramEncoder();
const OLD_CONCEPTS = FIXTURE_CONCEPTS.slice(0, 6);

async function build(version: string, concepts: typeof FIXTURE_CONCEPTS, checksum: string): Promise<void> {
  await buildIndex({
    concepts, kbSources: ['fixture'], kbChecksum: checksum.repeat(64), encoder,
    model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, version), progress: false,
  });
}

async function openResolved(options: { version?: string } = {}): Promise<LinkIndex> {
  return LinkIndex.open(resolveIndexDir(root, options).dir, lowerNormalize);
}

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-index-versions-'));
  await build('kb-2026-10', OLD_CONCEPTS, 'a');
  await new Promise((resolve) => setTimeout(resolve, 5));
  await build('kb-2026-11', FIXTURE_CONCEPTS, 'b');
});
after(() => rmSync(root, { recursive: true, force: true }));

test('a root lists its complete versions only, and serves none until one is activated', () => {
  mkdirSync(join(root, 'kb-2026-12.building-4242'));
  writeFileSync(join(root, 'kb-2026-12.building-4242', 'manifest.json'), '{}');
  mkdirSync(join(root, 'kb-broken'));
  writeFileSync(join(root, 'kb-broken', 'manifest.json'), '{"formatVersion": 1}');
  // What a rebuild in place moves aside (a whole index), and a dangling link.
  cpSync(join(root, 'kb-2026-10'), join(root, 'kb-2026-10.replaced-4242'), { recursive: true });
  symlinkSync(join(root, 'gone'), join(root, 'kb-dangling'));
  try {
    assert.deepEqual(listIndexVersions(root).map((v) => v.name), ['kb-2026-10', 'kb-2026-11']);
    assert.throws(() => activateIndexVersion(root, 'kb-2026-10.replaced-4242'), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX_VERSION');
    // A directory that merely contains indexes is not silently served: CURRENT must say which.
    assert.throws(() => resolveIndexDir(root), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX' && /manifest\.json: no such file.*cuilink index activate/.test(e.message));
    assert.throws(() => activateIndexVersion(root, 'kb-broken'), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX');
    assert.throws(() => activateIndexVersion(root, 'kb-2026-12.building-4242'), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX_VERSION');
  } finally {
    rmSync(join(root, 'kb-2026-12.building-4242'), { recursive: true });
    rmSync(join(root, 'kb-broken'), { recursive: true });
    rmSync(join(root, 'kb-2026-10.replaced-4242'), { recursive: true });
    rmSync(join(root, 'kb-dangling'));
  }
});

test('activating a version switches what the next open serves, and rolling back switches it back', async () => {
  const old = activateIndexVersion(root, 'kb-2026-10');
  assert.equal(readFileSync(join(root, CURRENT_VERSION_FILE), 'utf8'), 'kb-2026-10\n');
  const before = await openResolved();
  assert.equal(resolveIndexDir(root).chosenBy, 'current');
  assert.equal(before.manifest.indexVersion, old.manifest.indexVersion);
  assert.equal(before.concepts.length, OLD_CONCEPTS.length);
  assert.equal(before.indexOf('MESH:D000077'), undefined, 'the old KB lacks acetaminophen');

  activateIndexVersion(root, 'kb-2026-11');
  const after = await openResolved();
  assert.notEqual(after.manifest.indexVersion, before.manifest.indexVersion);
  assert.notEqual(after.indexOf('MESH:D000077'), undefined);
  // The instance opened before the switch keeps serving its own version untouched.
  assert.equal(before.concepts.length, OLD_CONCEPTS.length);

  activateIndexVersion(root, 'kb-2026-10');
  assert.equal((await openResolved()).manifest.indexVersion, old.manifest.indexVersion);
  assert.deepEqual(readdirSync(root).filter((n) => n.startsWith('.')), [], 'no temporary pointer file left behind');
});

test('a pinned version wins over CURRENT, and a path that is itself an index directory is used as is', () => {
  activateIndexVersion(root, 'kb-2026-10');
  assert.deepEqual(resolveIndexDir(root, { version: 'kb-2026-11' }), { dir: join(root, 'kb-2026-11'), version: 'kb-2026-11', chosenBy: 'pinned' });
  assert.deepEqual(resolveIndexDir(join(root, 'kb-2026-11')), { dir: join(root, 'kb-2026-11'), chosenBy: 'index-dir' });
});

test('a missing, incomplete or path-like version is refused, never replaced by another', () => {
  assert.throws(() => activateIndexVersion(root, 'kb-2027-01'), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX' && /kb-2027-01/.test(e.message));
  assert.throws(() => activateIndexVersion(root, '../elsewhere'), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX_VERSION');
  assert.throws(() => resolveIndexDir(root, { version: 'kb-2026-11.building-1' }), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX_VERSION');
  writeFileSync(join(root, CURRENT_VERSION_FILE), 'kb-2027-01\n');
  assert.throws(() => resolveIndexDir(root), (e: unknown) => e instanceof InputError && /kb-2027-01/.test(e.message));
  activateIndexVersion(root, 'kb-2026-11');
});

test('an empty directory is an error that says what to do', () => {
  const empty = mkdtempSync(join(tmpdir(), 'cuilink-index-root-'));
  try {
    assert.throws(() => resolveIndexDir(empty), (e: unknown) => e instanceof InputError && /cuilink index build/.test(e.message));
  } finally {
    rmSync(empty, { recursive: true });
  }
});

test("two writers with one pid on different hosts (a shared volume) never share CURRENT's temporary: another host's in-flight switch is left alone", () => {
  // Containers on two hosts both run as pid 1.
  assert.notEqual(currentVersionTemporary(root, { host: 'node-a', pid: 1 }), currentVersionTemporary(root, { host: 'node-b', pid: 1 }));
  const theirs = currentVersionTemporary(root, { host: `${hostname()}-elsewhere`, pid: process.pid });
  writeFileSync(theirs, 'kb-2026-10\n');
  try {
    activateIndexVersion(root, 'kb-2026-11');
    assert.equal(readFileSync(join(root, CURRENT_VERSION_FILE), 'utf8'), 'kb-2026-11\n');
    assert.equal(readFileSync(theirs, 'utf8'), 'kb-2026-10\n', "the other host's temporary was overwritten or renamed away");
  } finally {
    rmSync(theirs, { force: true });
  }
});
