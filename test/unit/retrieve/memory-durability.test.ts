import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publishMemory } from '../../../src/link/memory-learner.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { currentMemoryVersion, resolveMemoryDir } from '../../../src/retrieve/memory-root.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';
import { indexOfEvent, journalFs, type FsEvent } from '../../support/fs-journal.ts';

const encoder = new TrigramEncoder();
const MODEL = { id: encoder.modelId, sha256: 'd'.repeat(64), dims: encoder.dims };

function firstVersion(root: string): string {
  const store = MemoryStore.empty(MODEL, lowerNormalize);
  store.add([{ text: 'heart attack', label: 'Disease', ids: ['MESH:D009203'], source: 'test', time: 1 }], [encoder.vector('heart attack')]);
  return publishMemory(store, root);
}

// The memory updater publishes a version, then names it in CURRENT; linkers swap to it and a
// restarted updater or linker opens it. A version CURRENT names must be whole on the disk.
test('a memory version whose prototypes could not be written whole (the kernel refuses a write past a file-size limit, as on a full disk) is never made current', () => {
  const root = join(mkdtempSync(join(tmpdir(), 'cuilink-memory-full-')), 'memory');
  try {
    const v1 = firstVersion(root);
    // 4 KiB a file: the records and the manifest fit, 16 prototypes (~400 bytes each) do not.
    const child = spawnSync('bash', ['-c', 'ulimit -f 4 && exec "$0" --import tsx test/support/memory-publish-process.ts "$1" 15', process.execPath, root], { encoding: 'utf8', env: { ...process.env, TSX_DISABLE_CACHE: '1' } });
    assert.equal(child.status, 1, `the publish fails: ${child.stdout}${child.stderr}`);
    assert.equal(child.stdout.trim(), 'WRITE_INCOMPLETE', child.stderr);
    assert.equal(currentMemoryVersion(root), v1, 'CURRENT still names the last whole version');
    assert.equal(MemoryStore.open(resolveMemoryDir(root).dir, lowerNormalize).size, 1);
    assert.deepEqual(readdirSync(root).filter((name) => name !== 'CURRENT'), [v1], 'no other version, no staging left (it holds mention text)');
  } finally {
    rmSync(join(root, '..'), { recursive: true, force: true });
  }
});

test('every file of a memory version and the version itself reach the disk before CURRENT names it, and CURRENT before the publish returns', () => {
  const root = join(mkdtempSync(join(tmpdir(), 'cuilink-memory-sync-')), 'memory');
  const journal = journalFs();
  let version: string;
  try {
    firstVersion(root);
    const store = MemoryStore.open(resolveMemoryDir(root).dir, lowerNormalize);
    store.add([{ text: 'seizure', label: 'Disease', ids: ['MESH:D012640'], source: 'test', time: 2 }], [encoder.vector('seizure')]);
    journal.events.length = 0;
    version = publishMemory(store, root);
  } finally {
    journal.restore();
  }
  try {
    const { events } = journal;
    const show = JSON.stringify(events);
    const isRename = (to: string) => (e: FsEvent) => e.op === 'rename' && e.to === to;
    const synced = (path: string, from = 0) => {
      const i = indexOfEvent(events.slice(from), (e) => e.op === 'fsync' && e.path === path);
      return i < 0 ? -1 : from + i;
    };
    const placed = indexOfEvent(events, isRename(join(root, version)));
    assert.ok(placed >= 0, show);
    const staging = (events[placed] as { from: string }).from;
    for (const file of ['records.jsonl', 'prototypes.hnsw', 'manifest.json']) {
      const at = synced(join(staging, file));
      assert.ok(at >= 0 && at < placed, `${file} is flushed before the version is renamed into place: ${show}`);
    }
    const stagingSynced = synced(staging);
    assert.ok(stagingSynced >= 0 && stagingSynced < placed, `the staging directory's entries are flushed before the rename: ${show}`);
    const current = indexOfEvent(events, isRename(join(root, 'CURRENT')));
    assert.ok(current > placed, show);
    const rootSynced = synced(root, placed);
    assert.ok(rootSynced > placed && rootSynced < current, `the version's rename is flushed before CURRENT names it: ${show}`);
    const temporary = (events[current] as { from: string }).from;
    const temporarySynced = synced(temporary);
    assert.ok(temporarySynced >= 0 && temporarySynced < current, `CURRENT's new content is flushed before its rename: ${show}`);
    assert.ok(synced(root, current) > current, `CURRENT's rename is flushed: ${show}`);
  } finally {
    rmSync(join(root, '..'), { recursive: true, force: true });
  }
});
