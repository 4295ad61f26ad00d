import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { choosePrecision, readModelManifest, rowsIndependentOfBatch } from '../../../src/encode/manifest.ts';
import { parseProviderChoice } from '../../../src/encode/execution-provider.ts';

const shipped = JSON.parse(readFileSync('models/default/biencoder/manifest.json', 'utf8')) as Record<string, unknown>;

const scratch: string[] = [];
after(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

function dirWith(manifest: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-manifest-'));
  scratch.push(dir);
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

test('the shipped manifest validates; precision follows the provider', () => {
  const m = readModelManifest('models/default/biencoder');
  assert.equal(m.kind, 'bi-encoder');
  assert.equal(choosePrecision(m, false), 'int8');
  assert.equal(choosePrecision(m, true), 'fp16');
  assert.throws(() => choosePrecision(m, false, 'fp32'), /ships no fp32/);
});

test('invalid manifests name the field', () => {
  assert.throws(() => readModelManifest(dirWith({ ...shipped, pooling: 'max' })), /'pooling'/);
  assert.throws(() => readModelManifest(dirWith({ ...shipped, dims: undefined })), /needs pooling and dims/);
  assert.throws(() => readModelManifest(dirWith({ ...shipped, files: {} })), /names no ONNX file/);
  // Rerank settings live in one place (src/link/link-config.ts): a manifest carrying some is refused, not half-read.
  assert.throws(() => readModelManifest(dirWith({ ...shipped, rerank: { weight: 0.1 } })), /'rerank': rerank settings are not read from a model manifest: put them in a link config/);
});

test('provider choice is validated', () => {
  assert.equal(parseProviderChoice(undefined), 'auto');
  assert.equal(parseProviderChoice('cpu'), 'cpu');
  assert.throws(() => parseProviderChoice('tpu'), /auto, cuda, cpu/);
});

test('int8 rows are independent of their batch only when the manifest says per-token activations', () => {
  const perTensor = readModelManifest('models/default/biencoder');
  // The shipped files quantize activations per batch tensor: each mention runs alone.
  assert.equal(rowsIndependentOfBatch(perTensor, 'int8'), false);
  assert.equal(rowsIndependentOfBatch(perTensor, 'fp16'), true);
  assert.equal(rowsIndependentOfBatch(perTensor, 'fp32'), true);
  const perToken = readModelManifest(dirWith({ ...shipped, onnx: { ...(shipped.onnx as object), int8Activations: 'per-token' } }));
  assert.equal(rowsIndependentOfBatch(perToken, 'int8'), true);
  const said = readModelManifest(dirWith({ ...shipped, onnx: { ...(shipped.onnx as object), int8Activations: 'per-tensor' } }));
  assert.equal(rowsIndependentOfBatch(said, 'int8'), false);
  assert.throws(() => readModelManifest(dirWith({ ...shipped, onnx: { int8Activations: 'per-row' } })), /int8Activations/);
});
