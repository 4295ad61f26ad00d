import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { indexActivate } from '../../../src/cli/commands/index-activate.ts';
import { indexInfo } from '../../../src/cli/commands/index-info.ts';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { capture } from '../../support/capture-console.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

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

test('index info --verify checks the files against the checksums recorded at build; an index without them says so', async () => {
  const built = join(root, 'built');
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture.jsonl'], kbChecksum: 'a'.repeat(64), encoder: new TrigramEncoder(),
    model: { path: 'models/test', sha256: 'b'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: built, progress: false,
  });
  const intact = await capture(() => indexInfo.run(['--index', built, '--verify']));
  assert.equal(intact.code, 0);
  assert.match(intact.out.join('\n'), /^file checksums +recorded; every file matches them/m);

  const concepts = join(built, 'concepts.jsonl');
  writeFileSync(concepts, readFileSync(concepts, 'utf8').replace(FIXTURE_CONCEPTS[0]!.name, 'Xyzzy'));
  await assert.rejects(indexInfo.run(['--index', built, '--verify']), (e: Error & { code?: string }) => e.code === 'BAD_INDEX' && /concepts\.jsonl: .*the file changed after the index was built/.test(e.message));
  // Without --verify the manifest is shown as before (reading it reads no index file).
  assert.equal((await capture(() => indexInfo.run(['--index', built]))).code, 0);

  const old = await capture(() => indexInfo.run(['--index', FIXTURE_INDEX, '--verify']));
  assert.equal(old.code, 0);
  assert.match(old.out.join('\n'), /^file checksums +none \(built before checksums/m);
});
