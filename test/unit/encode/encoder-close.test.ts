import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { OnnxSession } from '../../../src/encode/onnx-session.ts';
import type { CuilinkError } from '../../../src/kb/errors.ts';

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

// A stage told to stop (SIGTERM) just after its worker died: the replacement is never started, and
// close() waited the 60 s grace for an 'exit' the dead worker had already sent. The test timeout
// is half that grace; a working close() takes the restart backoff (ms).
test('close() during the restart backoff of a dead worker returns without waiting for the dead worker', { timeout: 30_000 }, async () => {
  const session = await OnnxSession.open('models/default/biencoder/model.int8.onnx', { provider: 'cpu', deviceId: 0, threads: 1, log: () => {} });
  await session.killWorker();
  assert.equal(session.available, false, 'the replacement worker is not up yet');
  const queued = session.run([], 'last_hidden_state', 'none', false).then(
    () => 'resolved',
    (error: CuilinkError) => error.code,
  );
  await session.close();
  assert.equal(await queued, 'ENCODER_CLOSED');
  assert.equal(session.restarts, 0);
});
