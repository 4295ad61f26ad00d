import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../../src/kb/errors.ts';
import { buildIndexFromKb } from '../../../src/link/build-index-from-kb.ts';

test('index build --out EXISTING fails before loading the KB or the model', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-exists-'));
  try {
    // Neither the KB nor the model exists: had either been loaded first, the error would name it.
    await assert.rejects(
      buildIndexFromKb({ kbPaths: [join(dir, 'no-such-kb.obo')], modelDir: join(dir, 'no-such-model'), outDir: dir, progress: false }),
      (e: unknown) => e instanceof InputError && e.code === 'INDEX_EXISTS' && /already exists \(pass --force to replace it\)/.test(e.message),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
