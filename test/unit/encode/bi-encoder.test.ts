import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BiEncoder } from '../../../src/encode/bi-encoder.ts';
import { CudaUnavailableError, cudaProviderMissing } from '../../../src/encode/execution-provider.ts';

const MODEL = 'models/default/biencoder';
let encoder: BiEncoder;
const logs: string[] = [];

before(async () => {
  encoder = await BiEncoder.open(MODEL, { provider: 'auto', threads: 1, log: (l) => logs.push(l) });
});
after(() => encoder.close());

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

test('the provider in use is logged at start', () => {
  assert.ok(logs.some((l) => l.includes(`on ${encoder.provider}`)), logs.join('\n'));
  if (cudaProviderMissing() !== undefined) assert.equal(encoder.provider, 'cpu');
  assert.equal(encoder.precision, encoder.provider === 'cpu' ? 'int8' : 'fp16');
});

test('unit vectors of the manifest dims, in input order, batching-invariant', async () => {
  const texts = ['breast cancer', 'carcinoma of the breast', 'type 2 diabetes mellitus with a rather long name that is longer', 'fever'];
  const vectors = await encoder.encode(texts);
  assert.equal(vectors.length, 4);
  for (const v of vectors) {
    assert.equal(v.length, encoder.dims);
    assert.ok(Math.abs(dot(v, v) - 1) < 1e-4);
  }
  // Same text alone and in a batch of mixed lengths: padding must not leak into pooling. Dynamic
  // int8 quantization scales activations per batch tensor, so only near-equality holds there.
  const [alone] = await encoder.encode([texts[2]!]);
  assert.ok(dot(alone!, vectors[2]!) > (encoder.precision === 'int8' ? 0.98 : 0.9999));
  assert.ok(dot(vectors[0]!, vectors[1]!) > dot(vectors[0]!, vectors[3]!), 'synonyms are closer than unrelated names');
});

test('many texts across several length buckets come back aligned', async () => {
  const texts = Array.from({ length: 150 }, (_, i) => `${'word '.repeat(i % 9)}name ${i}`);
  const vectors = await encoder.encode(texts);
  const again = await encoder.encode([texts[77]!]);
  assert.ok(dot(again[0]!, vectors[77]!) > (encoder.precision === 'int8' ? 0.98 : 0.9999));
  assert.ok(encoder.stats.batches >= 3);
});

test('grouped texts get exactly the vectors they get alone, at any precision', async () => {
  const note1 = ['breast cancer', 'carcinoma of the breast'];
  const note2 = ['type 2 diabetes mellitus with a rather long name that is longer', 'fever', 'x'];
  const together = await encoder.encode([...note1, ...note2], [1, 1, 2, 2, 2]);
  const alone1 = await encoder.encode(note1);
  const alone2 = await encoder.encode(note2);
  assert.deepEqual(together.slice(0, 2), alone1);
  assert.deepEqual(together.slice(2), alone2);
});

test('fp16 vectors do not depend on the batch', async () => {
  const fp16 = await BiEncoder.open(MODEL, { provider: 'cpu', precision: 'fp16', threads: 1, log: () => {} });
  try {
    const texts = ['breast cancer', 'type 2 diabetes mellitus with a rather long name that is longer'];
    const batch = await fp16.encode(texts);
    const alone = await fp16.encode([texts[0]!]);
    assert.ok(dot(alone[0]!, batch[0]!) > 0.99999);
  } finally {
    await fp16.close();
  }
});

test('the event loop keeps turning while the model runs', async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  await encoder.encode(Array.from({ length: 256 }, (_, i) => `hereditary nonpolyposis colorectal cancer ${i}`));
  clearInterval(timer);
  assert.ok(ticks > 5, `only ${ticks} timer ticks during inference`);
});

test('cuda without its provider is a clear error; cpu and auto load', async () => {
  if (cudaProviderMissing() === undefined) return;
  await assert.rejects(BiEncoder.open(MODEL, { provider: 'cuda', log: () => {} }), (e: unknown) => e instanceof CudaUnavailableError && /libonnxruntime_providers_cuda\.so/.test((e as Error).message));
});

test('bad model directories fail with the reason', async () => {
  await assert.rejects(BiEncoder.open('models/default', { log: () => {} }), /cannot read model manifest/);
});

test('a tokenizer that is not the one the manifest records is refused (the model would keep its identity)', async () => {
  const { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join, resolve } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-tokenizer-'));
  try {
    cpSync(join(MODEL, 'manifest.json'), join(dir, 'manifest.json'));
    for (const file of ['model.int8.onnx', 'model.fp16.onnx']) symlinkSync(resolve(MODEL, file), join(dir, file));
    const tokenizer = JSON.parse(readFileSync(join(MODEL, 'tokenizer.json'), 'utf8')) as { normalizer?: { lowercase?: boolean } };
    if (tokenizer.normalizer) tokenizer.normalizer.lowercase = false;
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
    const opened = await BiEncoder.open(dir, { provider: 'cpu', threads: 1, log: () => {} }).catch((error: unknown) => error as Error & { code?: string });
    if (opened instanceof BiEncoder) {
      await opened.close();
      assert.fail('a model directory with another tokenizer opened');
    }
    assert.equal(opened.code, 'MODEL_CHECKSUM');
    assert.match(opened.message, /tokenizer\.json/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
