import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { indexBuild } from '../../../src/cli/commands/index-build.ts';
import { capture } from '../../support/capture-console.ts';

test('index build --sole-builder removes the staging directory a killed build on another host left (a retried Job pod); without it, that directory stays', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-index-build-cmd-'));
  try {
    const leftBehind = (version: string) => {
      const dir = join(root, `${version}.building-cuilink-index-build-x7k2p-1`);
      mkdirSync(dir);
      writeFileSync(join(dir, 'names.hnsw'), 'half written by a pod that was killed');
      writeFileSync(join(dir, 'builder.json'), JSON.stringify({ host: 'cuilink-index-build-x7k2p', pid: 1 }));
      return dir;
    };
    const build = (version: string, extra: string[]) => capture(() => indexBuild.run(['--kb', 'test/fixtures/kb/ctd-tiny.tsv', '--out', join(root, version), '--provider', 'cpu', '--no-progress', ...extra]));
    const kept = leftBehind('kb-v1');
    assert.equal((await build('kb-v1', [])).code, 0);
    assert.ok(existsSync(kept), 'another host\'s build is not judged without --sole-builder');
    const removed = leftBehind('kb-v2');
    const run = await build('kb-v2', ['--sole-builder']);
    assert.equal(run.code, 0, run.err.join('\n'));
    assert.deepEqual(readdirSync(root).filter((name) => name.startsWith('kb-v2')), ['kb-v2']);
    assert.ok(!existsSync(removed));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('index build --help names --sole-builder', async () => {
  const { usage } = indexBuild;
  assert.match(usage, /^ {2}--sole-builder {2,}/m);
});
