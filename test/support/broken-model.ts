import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_MODEL_DIR } from '../../src/link/default-index.ts';

// A bi-encoder directory whose ONNX file is valid (onnxruntime loads it, the manifest's checksums
// match) but whose graph fails on every run: input_ids + attention_mask are reshaped to 1000003
// elements, a count no batch of ≤ 32-token sequences has. Every run rejects with INFERENCE_FAILED,
// like a broken export behind a valid manifest (issue #27). The ONNX protobuf is written by hand.

function varint(value: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return out;
}

const key = (field: number, wire: number) => varint((field << 3) | wire);
const int = (field: number, value: number | bigint) => Buffer.from([...key(field, 0), ...varint(value)]);
const bytes = (field: number, value: Buffer) => Buffer.concat([Buffer.from([...key(field, 2), ...varint(value.length)]), value]);
const str = (field: number, value: string) => bytes(field, Buffer.from(value, 'utf8'));
const msg = (field: number, ...parts: Buffer[]) => bytes(field, Buffer.concat(parts));

const FLOAT = 1;
const INT64 = 7;

/** ValueInfoProto of a tensor with symbolic dims. */
function valueInfo(field: number, name: string, elemType: number, dims: string[]): Buffer {
  const shape = Buffer.concat(dims.map((d) => msg(1, str(2, d))));
  return msg(field, str(1, name), msg(2, msg(1, int(1, elemType), bytes(2, shape))));
}

function node(inputs: string[], outputs: string[], opType: string, attributes: Buffer[] = []): Buffer {
  return msg(1, ...inputs.map((i) => str(1, i)), ...outputs.map((o) => str(2, o)), str(3, `${opType}_${outputs[0]}`), str(4, opType), ...attributes);
}

/** The ONNX model: (input_ids + attention_mask) → Cast float → Reshape [1000003] → last_hidden_state. */
export function brokenOnnxModel(outputName = 'last_hidden_state'): Buffer {
  const shapeTensor = msg(5, int(1, 1), int(2, INT64), str(8, 'impossible_shape'), bytes(9, Buffer.from(new BigInt64Array([1000003n]).buffer)));
  const castTo = msg(5, str(1, 'to'), int(3, FLOAT), int(20, 2));
  const graph = Buffer.concat([
    node(['input_ids', 'attention_mask'], ['summed'], 'Add'),
    node(['summed'], ['as_float'], 'Cast', [castTo]),
    node(['as_float', 'impossible_shape'], [outputName], 'Reshape'),
    str(2, 'broken'),
    shapeTensor,
    valueInfo(11, 'input_ids', INT64, ['batch', 'sequence']),
    valueInfo(11, 'attention_mask', INT64, ['batch', 'sequence']),
    valueInfo(12, outputName, FLOAT, ['n']),
  ]);
  return Buffer.concat([int(1, 7), str(2, 'cuilink-test'), msg(7, graph), msg(8, str(1, ''), int(2, 13))]);
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/**
 * Writes the broken bi-encoder directory at `dir`: the default bi-encoder's tokenizer and query
 * settings, an fp32 file that fails on every run, and a manifest whose checksums match.
 */
export function writeBrokenBiEncoder(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const base = JSON.parse(readFileSync(join(DEFAULT_MODEL_DIR, 'manifest.json'), 'utf8')) as Record<string, unknown>;
  const model = brokenOnnxModel(base.outputName as string);
  writeFileSync(join(dir, 'model.onnx'), model);
  copyFileSync(join(DEFAULT_MODEL_DIR, base.tokenizer as string), join(dir, 'tokenizer.json'));
  const manifest = {
    ...base,
    id: 'cuilink-test-broken-biencoder',
    files: { fp32: 'model.onnx' },
    tokenizer: 'tokenizer.json',
    sha256: { 'model.onnx': sha256(model), 'tokenizer.json': sha256(readFileSync(join(dir, 'tokenizer.json'))) },
  };
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest, null, 2));
  return dir;
}
