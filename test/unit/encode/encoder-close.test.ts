import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

// In a child process: terminating a worker inside a native run aborts the whole process (SIGABRT),
// which is what this test would otherwise do to the test runner.
test('close() while a run is inside onnxruntime lets the run finish and the process live; queued runs are refused as closed', () => {
  const script = `
    import { BiEncoder } from './src/encode/bi-encoder.ts';
    const enc = await BiEncoder.open('models/default/biencoder', { provider: 'cpu', threads: 1, log: () => {} });
    const texts = Array.from({ length: 64 }, (_, i) => 'hereditary nonpolyposis colorectal cancer type ' + i + ' with many long words to fill the tokens');
    const running = enc.encode(texts).then((v) => 'resolved ' + v.length, (e) => 'rejected ' + e.code);
    await new Promise((r) => setTimeout(r, 5));
    const queued = enc.encode(['fever']).then((v) => 'resolved ' + v.length, (e) => 'rejected ' + e.code);
    await enc.close();
    console.log(await running, '|', await queued);
  `;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
  assert.equal(child.status, 0, `exit ${child.status} ${child.signal ?? ''}: ${child.stderr}`);
  assert.match(child.stdout, /^resolved 64 \| rejected ENCODER_CLOSED$/m);
});
