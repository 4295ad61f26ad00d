import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';
import { indexOfEvent, journalFs } from '../../support/fs-journal.ts';

// `cuilink run`'s first start builds the default index into its cache, and every later start
// takes a directory with a manifest.json for a built index: after a power cut, a renamed index
// whose files had not reached the disk would be taken as built and fail every start.
test('every file of an index and the index directory reach the disk before it is renamed into place, and the rename after', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-index-sync-'));
  const outDir = join(root, 'index');
  const journal = journalFs();
  try {
    await buildIndex({ concepts: FIXTURE_CONCEPTS, kbSources: ['fixture.jsonl'], kbChecksum: 'a'.repeat(64), encoder: new TrigramEncoder(), model: { path: 'models/test', sha256: 'b'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir, chunkSize: 4, progress: false });
  } finally {
    journal.restore();
  }
  try {
    const { events } = journal;
    const show = JSON.stringify(events);
    const placed = indexOfEvent(events, (e) => e.op === 'rename' && e.to === outDir);
    assert.ok(placed >= 0, show);
    const staging = (events[placed] as { from: string }).from;
    const syncedBefore = (path: string) => {
      const at = indexOfEvent(events, (e) => e.op === 'fsync' && e.path === path);
      return at >= 0 && at < placed;
    };
    for (const file of ['names.hnsw', 'names.json', 'concepts.jsonl', 'manifest.json']) assert.ok(syncedBefore(join(staging, file)), `${file} is flushed before the rename: ${show}`);
    assert.ok(syncedBefore(staging), `the staging directory's entries are flushed before the rename: ${show}`);
    assert.ok(indexOfEvent(events.slice(placed), (e) => e.op === 'fsync' && e.path === root) > 0, `the rename is flushed: ${show}`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
