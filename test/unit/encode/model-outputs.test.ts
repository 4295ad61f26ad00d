import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BiEncoder } from '../../../src/encode/bi-encoder.ts';
import { CrossEncoder } from '../../../src/encode/cross-encoder.ts';
import { cudaProviderMissing } from '../../../src/encode/execution-provider.ts';
import { OnnxSession } from '../../../src/encode/onnx-session.ts';

const TOKENIZER = fileURLToPath(new URL('../../../models/default/biencoder/tokenizer.json', import.meta.url));
// Three one-op graphs built by hand (protobuf): last_hidden_state = Cast(input_ids × attention_mask)
// as float32, the same with a float16 output, and Cast(input_ids) with no attention_mask input.
const MODELS = {
  fp32: 'CAgSBnJldmlldzqTAgotCglpbnB1dF9pZHMKDmF0dGVudGlvbl9tYXNrEgZtYXNrZWQaA211bCIDTXVsCiIKBm1hc2tlZBIBZhoEY2FzdCIEQ2FzdCoJCgJ0bxgBoAECCi0KAWYKBGF4ZXMSEWxhc3RfaGlkZGVuX3N0YXRlGgR1bnNxIglVbnNxdWVlemUSAWcqDAgBEAc4AkIEYXhlc1ojCglpbnB1dF9pZHMSFgoUCAcSEAoHEgViYXRjaAoFEgNzZXFaKAoOYXR0ZW50aW9uX21hc2sSFgoUCAcSEAoHEgViYXRjaAoFEgNzZXFiLwoRbGFzdF9oaWRkZW5fc3RhdGUSGgoYCAESFAoHEgViYXRjaAoFEgNzZXEKAggBQgQKABAR',
  fp16Output: 'CAgSBnJldmlldzqTAgotCglpbnB1dF9pZHMKDmF0dGVudGlvbl9tYXNrEgZtYXNrZWQaA211bCIDTXVsCiIKBm1hc2tlZBIBZhoEY2FzdCIEQ2FzdCoJCgJ0bxgKoAECCi0KAWYKBGF4ZXMSEWxhc3RfaGlkZGVuX3N0YXRlGgR1bnNxIglVbnNxdWVlemUSAWcqDAgBEAc4AkIEYXhlc1ojCglpbnB1dF9pZHMSFgoUCAcSEAoHEgViYXRjaAoFEgNzZXFaKAoOYXR0ZW50aW9uX21hc2sSFgoUCAcSEAoHEgViYXRjaAoFEgNzZXFiLwoRbGFzdF9oaWRkZW5fc3RhdGUSGgoYCAoSFAoHEgViYXRjaAoFEgNzZXEKAggBQgQKABAR',
  clsWithoutMask: 'CAgSBnJldmlldzq9AQolCglpbnB1dF9pZHMSAWYaBGNhc3QiBENhc3QqCQoCdG8YAaABAgotCgFmCgRheGVzEhFsYXN0X2hpZGRlbl9zdGF0ZRoEdW5zcSIJVW5zcXVlZXplEgFnKgwIARAHOAJCBGF4ZXNaIwoJaW5wdXRfaWRzEhYKFAgHEhAKBxIFYmF0Y2gKBRIDc2VxYi8KEWxhc3RfaGlkZGVuX3N0YXRlEhoKGAgBEhQKBxIFYmF0Y2gKBRIDc2VxCgIIAUIECgAQEQ==',
};

function modelDir(root: string, name: keyof typeof MODELS, manifest: Record<string, unknown>): string {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'm.onnx'), Buffer.from(MODELS[name], 'base64'));
  copyFileSync(TOKENIZER, join(dir, 'tokenizer.json'));
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ schemaVersion: 1, id: name, tokenizer: 'tokenizer.json', maxLength: 32, kind: 'bi-encoder', query: { mode: 'mention', markers: ['[M]', '[/M]'], contextChars: 64 }, normalize: false, dims: 1, outputName: 'last_hidden_state', ...manifest }));
  return dir;
}

async function encode(dir: string): Promise<number[]> {
  const encoder = await BiEncoder.open(dir, { provider: 'cpu', threads: 1, log: () => {} });
  try {
    return (await encoder.encode(['a', 'fever', 'breast cancer of the left side'])).map((v) => v[0]!);
  } finally {
    await encoder.close();
  }
}

test('a model with a float16 output encodes as its float32 twin (the 16-bit patterns were read as numbers)', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-outputs-'));
  try {
    const mean = { pooling: 'mean', inputNames: ['input_ids', 'attention_mask'] };
    const fp32 = await encode(modelDir(root, 'fp32', { ...mean, files: { fp32: 'm.onnx' } }));
    const fp16 = await encode(modelDir(root, 'fp16Output', { ...mean, files: { fp16: 'm.onnx' } }));
    fp16.forEach((value, i) => assert.ok(Math.abs(value - fp32[i]!) <= Math.abs(fp32[i]!) * 1e-3, `${value} vs ${fp32[i]}`));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a CLS-pooling model without an attention_mask input encodes', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-outputs-'));
  try {
    const cls = await encode(modelDir(root, 'clsWithoutMask', { pooling: 'cls', inputNames: ['input_ids'], files: { fp32: 'm.onnx' } }));
    assert.deepEqual(cls, [101, 101, 101], 'the [CLS] id of every sequence');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a manifest naming an output the model lacks is refused at open, and no worker is left behind', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-outputs-'));
  try {
    const dir = modelDir(root, 'fp32', { pooling: 'mean', inputNames: ['input_ids', 'attention_mask'], files: { fp32: 'm.onnx' } });
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ ...manifest, outputName: 'pooler_output' }));
    const before = OnnxSession.openSessions().length;
    await assert.rejects(BiEncoder.open(dir, { provider: 'cpu', threads: 1, log: () => {} }), (error: Error & { code?: string }) => error.code === 'BAD_MODEL' && /no output 'pooler_output' \(has last_hidden_state\)/.test(error.message));
    assert.equal(OnnxSession.openSessions().length, before);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('auto without the CUDA provider opens the CPU file and never reads the fp16 one', async (t) => {
  if (cudaProviderMissing() === undefined) return t.skip('the CUDA provider is installed here');
  const root = mkdtempSync(join(tmpdir(), 'cuilink-outputs-'));
  try {
    const shipped = fileURLToPath(new URL('../../../models/default/biencoder/', import.meta.url));
    for (const file of ['manifest.json', 'tokenizer.json', 'model.int8.onnx']) symlinkSync(join(shipped, file), join(root, file));
    writeFileSync(join(root, 'model.fp16.onnx'), 'version https://git-lfs.github.com/spec/v1\n'); // a file that would fail its checksum
    const encoder = await BiEncoder.open(root, { provider: 'auto', threads: 1, log: () => {} });
    try {
      assert.equal(encoder.precision, 'int8');
    } finally {
      await encoder.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a cross-encoder whose output is not [batch, 1] or [batch, 2] logits is refused, not read as logits', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-outputs-'));
  try {
    // A manifest that names a hidden-state output ([batch, seq, 1] here): its last and first
    // numbers of a row were taken for the two class logits, a silent nonsense score.
    const dir = modelDir(root, 'fp32', { kind: 'cross-encoder', inputNames: ['input_ids', 'attention_mask'], files: { fp32: 'm.onnx' } });
    const cross = await CrossEncoder.open(dir, { provider: 'cpu', threads: 1, log: () => {} });
    try {
      await assert.rejects(cross.score([{ query: 'fever', candidate: 'Fever' }, { query: 'breast cancer', candidate: 'Breast Neoplasms' }]), (error: Error & { code?: string }) => error.code === 'BAD_MODEL' && /logits shape/.test(error.message));
    } finally {
      await cross.close();
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
