import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../src/retrieve/index-builder.ts';
import { FIXTURE_CONCEPTS } from '../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../support/trigram-encoder.ts';

// `cuilink index activate`, as the index-build Job and an operator rolling back run it.
let root: string;

function cuilink(...args: string[]) {
  const result = spawnSync(process.execPath, ['bin/cuilink.js', 'index', 'activate', ...args], { encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-activate-'));
  for (const [version, checksum] of [['kb-a', 'a'], ['kb-b', 'b']] as const) {
    await buildIndex({
      concepts: FIXTURE_CONCEPTS, kbSources: ['fixture'], kbChecksum: checksum.repeat(64), encoder: new TrigramEncoder(),
      model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, version), progress: false,
    });
  }
});
after(() => rmSync(root, { recursive: true, force: true }));

test('activate points CURRENT at a version and says what it replaced; --list marks it', () => {
  const first = cuilink('--root', root, '--version', 'kb-a');
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stderr, /now serves kb-a .* was unset/);
  const second = cuilink('--root', root, '--version', 'kb-b');
  assert.match(second.stderr, /now serves kb-b .* was kb-a/);
  assert.equal(readFileSync(join(root, 'CURRENT'), 'utf8'), 'kb-b\n');
  const list = cuilink('--root', root, '--list');
  assert.equal(list.code, 0);
  const lines = list.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 2);
  assert.match(lines.find((l) => l.includes('kb-b'))!, /^\* kb-b\t/);
  assert.match(lines.find((l) => l.includes('kb-a'))!, /^ {2}kb-a\t/);
});

test('a missing flag or an unknown version exits non-zero with one line and leaves CURRENT alone', () => {
  const before = readFileSync(join(root, 'CURRENT'), 'utf8');
  const noRoot = cuilink('--version', 'kb-a');
  assert.equal(noRoot.code, 2);
  assert.match(noRoot.stderr, /--root/);
  const unknown = cuilink('--root', root, '--version', 'kb-zzz');
  assert.notEqual(unknown.code, 0);
  assert.equal(unknown.stderr.trim().split('\n').length, 1);
  assert.match(unknown.stderr, /kb-zzz/);
  assert.equal(readFileSync(join(root, 'CURRENT'), 'utf8'), before);
});
