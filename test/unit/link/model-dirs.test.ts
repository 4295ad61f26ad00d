// The shipped models resolve from the package root, not the working directory: run from another
// directory, the default index still finds its bi-encoder and the reranker is not silently dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { PACKAGE_ROOT } from '../../../src/kb/package-root.ts';
import { DEFAULT_MODEL_DIR, defaultCacheDir } from '../../../src/link/default-index.ts';
import { DEFAULT_RERANKER_DIR, resolveRecordedModelDir } from '../../../src/link/open-linker.ts';
import { recordedModelPath } from '../../../src/link/build-index-from-kb.ts';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

test('PACKAGE_ROOT is the directory holding package.json, whatever the working directory', () => {
  const cwd = process.cwd();
  try {
    process.chdir(tmpdir());
    assert.equal(join(PACKAGE_ROOT), join(REPO));
    assert.ok(existsSync(join(DEFAULT_MODEL_DIR, 'manifest.json')), DEFAULT_MODEL_DIR);
    assert.ok(existsSync(join(DEFAULT_RERANKER_DIR, 'manifest.json')), DEFAULT_RERANKER_DIR);
    if (process.env.CUILINK_CACHE_DIR === undefined) assert.equal(defaultCacheDir(), join(REPO, '.cache', 'cuilink'));
  } finally {
    process.chdir(cwd);
  }
});

test('a shipped model is recorded relative to the package and resolves back from any directory', () => {
  assert.equal(recordedModelPath(DEFAULT_MODEL_DIR), join('models', 'default', 'biencoder'));
  const outside = join(tmpdir(), 'some-model');
  assert.equal(recordedModelPath(outside), outside, 'a model outside the package is recorded as given');
  const cwd = process.cwd();
  try {
    process.chdir(tmpdir());
    assert.equal(resolveRecordedModelDir('models/default/biencoder'), DEFAULT_MODEL_DIR.replace(/\/$/, ''));
    assert.equal(resolveRecordedModelDir('no/such/model'), 'no/such/model', 'unknown relative paths stay as recorded (the open fails naming them)');
    assert.equal(resolveRecordedModelDir(outside), outside);
  } finally {
    process.chdir(cwd);
  }
});
