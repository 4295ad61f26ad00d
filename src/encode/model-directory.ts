import { join } from 'node:path';
import { InputError } from '../kb/errors.ts';
import { WordPieceTokenizer } from '../text/tokenizer.ts';
import { cudaProviderMissing, type ProviderChoice } from './execution-provider.ts';
import { choosePrecision, modelChecksum, readModelManifest, verifyModelFile, type ModelManifest, type Precision } from './manifest.ts';
import { OnnxSession } from './onnx-session.ts';
import { CPU_BATCH_LIMITS, GPU_BATCH_LIMITS, type BatchLimits } from './length-batches.ts';

export interface EncoderOptions {
  provider?: ProviderChoice;
  deviceId?: number;
  threads?: number;
  /** Overrides int8-on-CPU / fp16-on-GPU. */
  precision?: Precision;
  batch?: Partial<BatchLimits>;
  /** Spin idle onnxruntime intra-op threads (default off: faster on small shared machines). */
  spinning?: boolean;
  /** Start-up lines (the model loaded, the provider in use); stderr by default. */
  log?: (line: string) => void;
  /** Set-up detail (the CPU fallback on a machine without the CUDA provider); stderr when CUILINK_LOG_LEVEL=debug, else dropped. */
  debug?: (line: string) => void;
}

function defaultDebug(line: string): void {
  if (process.env.CUILINK_LOG_LEVEL === 'debug') process.stderr.write(`cuilink: ${line}\n`);
}

/** A model directory opened: manifest, tokenizer and an ONNX session on the chosen provider. */
export interface OpenedModel {
  dir: string;
  manifest: ModelManifest;
  tokenizer: WordPieceTokenizer;
  session: OnnxSession;
  precision: Precision;
  modelSha256: string;
  batchLimits: BatchLimits;
  /** Token id of the opening mention marker, when the vocabulary has it. */
  markerId: number | undefined;
}

export async function openModelDirectory(dir: string, kind: ModelManifest['kind'], options: EncoderOptions): Promise<OpenedModel> {
  const manifest = readModelManifest(dir);
  if (manifest.kind !== kind) throw new InputError(`${dir} holds a ${manifest.kind}, not a ${kind}`, 'BAD_MODEL');
  const log = options.log ?? ((line: string) => process.stderr.write(`cuilink: ${line}\n`));
  // The model's identity is its manifest's hash: a tokenizer swapped under it must not pass as the same model.
  verifyModelFile(dir, manifest, manifest.tokenizer);
  const tokenizer = WordPieceTokenizer.load(join(dir, manifest.tokenizer));
  // With `auto` and no CUDA provider installed the CPU is certain: its file is the one to check and open.
  const wantsGpu = options.provider === 'cuda' || (options.provider !== 'cpu' && cudaProviderMissing() === undefined);
  // The file depends on the provider, which is only known once a session has started.
  let precision = choosePrecision(manifest, wantsGpu, options.precision);
  verifyModelFile(dir, manifest, manifest.files[precision]!);
  let session = await OnnxSession.open(join(dir, manifest.files[precision]!), { provider: options.provider ?? 'auto', deviceId: options.deviceId ?? 0, threads: options.threads, spinning: options.spinning, log, debug: options.debug ?? defaultDebug });
  if (session.provider === 'cpu' && options.precision === undefined && choosePrecision(manifest, false) !== precision) {
    await session.close();
    precision = choosePrecision(manifest, false);
    verifyModelFile(dir, manifest, manifest.files[precision]!);
    session = await OnnxSession.open(join(dir, manifest.files[precision]!), { provider: 'cpu', deviceId: 0, threads: options.threads, spinning: options.spinning, log, debug: options.debug ?? defaultDebug });
  }
  try {
    for (const name of manifest.inputNames) {
      if (!session.inputNames.includes(name)) throw new InputError(`${dir}: the ONNX model has no input '${name}' (has ${session.inputNames.join(', ')})`, 'BAD_MODEL');
    }
    // Checked at open: the first run would fail with a non-retriable error once the stage had started.
    if (!session.outputNames.includes(manifest.outputName)) throw new InputError(`${dir}: the ONNX model has no output '${manifest.outputName}' (has ${session.outputNames.join(', ')})`, 'BAD_MODEL');
  } catch (error) {
    await session.close(); // its worker thread would keep the process alive
    throw error;
  }
  const base = session.provider === 'cuda' ? GPU_BATCH_LIMITS : CPU_BATCH_LIMITS;
  log(`${manifest.kind} ${manifest.id} from ${dir}: ${precision} on ${session.provider}${session.provider === 'cuda' ? ` (device ${options.deviceId ?? 0})` : ` (${session.threads} thread${session.threads === 1 ? '' : 's'})`}`);
  return {
    dir,
    manifest,
    tokenizer,
    session,
    precision,
    modelSha256: modelChecksum(dir),
    batchLimits: { ...base, ...options.batch },
    markerId: tokenizer.tokenId(manifest.query.markers[0]),
  };
}
