import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { indexActivate } from '../../../src/cli/commands/index-activate.ts';
import { indexInfo } from '../../../src/cli/commands/index-info.ts';
import { capture } from '../../support/capture-console.ts';

const FIXTURE_INDEX = 'test/fixtures/eval/index';
let root: string;

before(() => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-index-cmd-'));
  cpSync(FIXTURE_INDEX, join(root, 'v1'), { recursive: true });
  writeFileSync(join(root, 'CURRENT'), 'v1\n');
});
after(() => rmSync(root, { recursive: true, force: true }));

test('index activate --list with --version is refused (the version would be ignored), CURRENT unchanged', async () => {
  await assert.rejects(indexActivate.run(['--root', root, '--list', '--version', 'v1']), (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && e.message === 'give --list or --version NAME, not both');
  assert.equal(readFileSync(join(root, 'CURRENT'), 'utf8'), 'v1\n');
});

test('index info --index ROOT shows the version CURRENT names, as linkers open it', async () => {
  const run = await capture(() => indexInfo.run(['--index', root]));
  assert.equal(run.code, 0);
  assert.match(run.out.join('\n'), /^served version +v1 \(CURRENT\)$/m);
  assert.match(run.out.join('\n'), /^index version +fixture-eval-1$/m);
  const json = await capture(() => indexInfo.run(['--index', root, '--json']));
  assert.equal((JSON.parse(json.out.join('\n')) as { indexVersion: string }).indexVersion, 'fixture-eval-1');
  // An index directory reads as before: no served-version row.
  const direct = await capture(() => indexInfo.run(['--index', FIXTURE_INDEX]));
  assert.doesNotMatch(direct.out.join('\n'), /served version/);
  assert.match(direct.out.join('\n'), /^index version +fixture-eval-1$/m);
});
