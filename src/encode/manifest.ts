import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { InputError } from '../kb/errors.ts';
import { fileDigest } from '../kb/file-digest.ts';

export const MODEL_MANIFEST_FILE = 'manifest.json';

const querySchema = z.object({
  mode: z.enum(['mention', 'context']),
  markers: z.tuple([z.string().min(1), z.string().min(1)]),
  contextChars: z.number().int().min(0).max(10_000),
});

/** docs/model-directory.md, validated once when a model directory is opened. */
export const modelManifestSchema = z
  .object({
    schemaVersion: z.literal(1),
    id: z.string().min(1),
    kind: z.enum(['bi-encoder', 'cross-encoder']),
    base: z.string().optional(),
    files: z.object({ fp32: z.string().optional(), int8: z.string().optional(), fp16: z.string().optional() }).refine((f) => f.fp32 ?? f.int8 ?? f.fp16, 'names no ONNX file'),
    tokenizer: z.string().min(1),
    maxLength: z.number().int().min(4).max(8192),
    pooling: z.enum(['cls', 'mean']).optional(),
    normalize: z.boolean().optional(),
    dims: z.number().int().min(1).optional(),
    inputNames: z.array(z.enum(['input_ids', 'attention_mask', 'token_type_ids'])).min(1),
    outputName: z.string().min(1),
    query: querySchema,
    candidate: z.object({ includeSemanticType: z.boolean() }).partial().optional(),
    /** Rerank settings are link options (src/link/link-config.ts, the one place for defaults); a manifest carrying them is refused, not silently ignored. */
    rerank: z.undefined({ message: "rerank settings are not read from a model manifest: put them in a link config (--link-config, or 'link' in the stage config; defaults in src/link/link-config.ts)" }).optional(),
    sha256: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/)).default({}),
    /** How the int8 file quantizes activations: per-tensor (one scale per batch tensor, so a row depends on its batch) unless it says per-token. */
    onnx: z.object({ int8Activations: z.enum(['per-tensor', 'per-token']).optional() }).passthrough().optional(),
  })
  .passthrough()
  .superRefine((m, ctx) => {
    if (m.kind === 'bi-encoder' && (m.pooling === undefined || m.dims === undefined)) ctx.addIssue({ code: 'custom', message: 'a bi-encoder needs pooling and dims' });
  });

export type ModelManifest = z.infer<typeof modelManifestSchema>;
export type Precision = 'fp32' | 'int8' | 'fp16';

/**
 * Whether a sequence's output is independent of the batch it runs in: fp16/fp32 rows never
 * interact; dynamic int8 scales activations per batch tensor unless the manifest says per token
 * (cuilink_models/per_token.py).
 */
export function rowsIndependentOfBatch(manifest: Pick<ModelManifest, 'onnx'>, precision: Precision): boolean {
  return precision !== 'int8' || manifest.onnx?.int8Activations === 'per-token';
}

export function readModelManifest(dir: string): ModelManifest {
  const file = join(dir, MODEL_MANIFEST_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new InputError(`${file}: cannot read model manifest (${(error as Error).message})`, 'BAD_MODEL', error);
  }
  const parsed = modelManifestSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(`${file}: '${issue.path.join('.') || '(root)'}': ${issue.message}`, 'BAD_MODEL');
  }
  return parsed.data;
}

/** The model's identity: a hash of its manifest, which lists every shipped file's checksum. */
export function modelChecksum(dir: string): string {
  return fileDigest(join(dir, MODEL_MANIFEST_FILE)).sha256;
}

/** Fails when a shipped file does not match the checksum its manifest records. */
export function verifyModelFile(dir: string, manifest: ModelManifest, file: string): void {
  const expected = manifest.sha256[file];
  if (expected === undefined) return;
  const actual = fileDigest(join(dir, file)).sha256;
  if (actual !== expected) throw new InputError(`${join(dir, file)}: checksum ${actual.slice(0, 12)} does not match the manifest's ${expected.slice(0, 12)}`, 'MODEL_CHECKSUM');
}

/** The precision to load: the one asked for, else int8 on CPU and fp16 on GPU, else what exists. */
export function choosePrecision(manifest: ModelManifest, onGpu: boolean, wanted?: Precision): Precision {
  if (wanted !== undefined) {
    if (!manifest.files[wanted]) throw new InputError(`model ${manifest.id} ships no ${wanted} file (has ${Object.keys(manifest.files).join(', ')})`, 'BAD_MODEL');
    return wanted;
  }
  const order: Precision[] = onGpu ? ['fp16', 'fp32', 'int8'] : ['int8', 'fp32', 'fp16'];
  return order.find((p) => manifest.files[p] !== undefined)!;
}
