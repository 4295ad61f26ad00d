import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIndexFromKb } from '../../../src/link/build-index-from-kb.ts';
import { DEFAULT_MODEL_DIR } from '../../../src/link/default-index.ts';
import { DEFAULT_RERANKER_DIR, openLinker } from '../../../src/link/open-linker.ts';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
let dir: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cuilink-open-linker-cleanup-'));
  await buildIndexFromKb({ kbPaths: [join('test', 'fixtures', 'kb', 'ctd-tiny.tsv')], modelDir: DEFAULT_MODEL_DIR, provider: 'cpu', outDir: join(dir, 'idx'), progress: false, log: () => {} });
  // A cross-encoder directory with its manifest but none of its model files: it fails to open
  // after the bi-encoder (its ONNX worker thread) already has.
  mkdirSync(join(dir, 'bad-reranker'));
  copyFileSync(join(DEFAULT_RERANKER_DIR, 'manifest.json'), join(dir, 'bad-reranker', 'manifest.json'));
});

after(() => rmSync(dir, { recursive: true, force: true }));

// In a child process: a leaked worker keeps a process from exiting, which would hang the test runner.
test('a cross-encoder that fails to open closes the bi-encoder opened before it, and the error is rethrown', () => {
  const script = `
    import { openLinker } from './src/link/open-linker.ts';
    const outcome = await openLinker({ indexDir: process.argv[1], rerankerDir: process.argv[2], provider: 'cpu', log: () => {} }).then(() => 'opened', (e) => 'rejected ' + e.code);
    console.log(outcome, '|', JSON.stringify(process.getActiveResourcesInfo().filter((r) => r === 'MessagePort')));
    process.exit(0);
  `;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script, join(dir, 'idx'), join(dir, 'bad-reranker')], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
  assert.equal(child.status, 0, `exit ${child.status} ${child.signal ?? ''}: ${child.stderr}`);
  assert.match(child.stdout, /^rejected \S+ \| \[\]$/m, 'the bi-encoder worker is closed');
});

test('an index built before checksums opens with one log line saying its files were not verified and how to have them verified; one with checksums without it', async () => {
  const old = join(dir, 'idx-before-checksums');
  cpSync(join(dir, 'idx'), old, { recursive: true });
  const manifest = JSON.parse(readFileSync(join(old, 'manifest.json'), 'utf8')) as { checksums?: unknown };
  delete manifest.checksums;
  writeFileSync(join(old, 'manifest.json'), JSON.stringify(manifest));
  const unverified = (line: string) => /records no file checksums/.test(line);
  for (const [indexDir, expected] of [[old, 1], [join(dir, 'idx'), 0]] as const) {
    const lines: string[] = [];
    const linker = await openLinker({ indexDir, rerankerDir: false, provider: 'cpu', log: (line) => lines.push(line) });
    try {
      assert.equal(lines.filter(unverified).length, expected, lines.join('\n'));
      if (expected === 1) assert.match(lines.find(unverified)!, new RegExp(`^index ${old} records no file checksums .*checked for shape only.*rebuild it with \`cuilink index build\``));
    } finally {
      await linker.close();
    }
  }
});
