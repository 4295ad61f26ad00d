import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDefaultOntology } from '../../../src/kb/default-ontology.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';

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
