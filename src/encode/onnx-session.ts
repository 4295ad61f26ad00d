import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { CuilinkError } from '../kb/errors.ts';
import { cudaProviderMissing, CudaUnavailableError, missingCudaLibraries, type ProviderChoice } from './execution-provider.ts';
import type { FeedTensor, Pooling, RunReply, WorkerReply, WorkerRequest } from './onnx-worker-protocol.ts';

export interface OnnxSessionOptions {
  provider: ProviderChoice;
  deviceId: number;
  /** Intra-op threads; defaults to the cores available, at most 4. */
  threads?: number;
  /** Spin idle intra-op threads (default false, or CUILINK_ORT_SPINNING=1). */
  spinning?: boolean;
  log: (line: string) => void;
  /** Lines only an operator debugging the set-up wants (the CPU fallback of `auto` on a machine without the CUDA provider). */
  debug?: (line: string) => void;
}

/** Fallback lines already written by this process: a CPU machine says "no CUDA provider" once, not once per model. */
const loggedFallbacks = new Set<string>();

function once(line: string, write: (line: string) => void): void {
  if (loggedFallbacks.has(line)) return;
  loggedFallbacks.add(line);
  write(line);
}

interface Pending {
  resolve: (reply: RunReply) => void;
  reject: (error: Error) => void;
}

/**
 * Runs this module's sibling worker: compiled, or from source under tsx, whose loader a worker
 * does not inherit, so the worker registers it before importing the .ts entry.
 */
function spawnWorker(): Worker {
  const ext = extname(fileURLToPath(import.meta.url));
  const url = new URL(`./onnx-worker${ext}`, import.meta.url);
  if (ext !== '.ts') return new Worker(url);
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then((m) => { m.register(); return import(${JSON.stringify(url.href)}); });`;
  return new Worker(bootstrap, { eval: true });
}

/**
 * One ONNX model in its own worker thread. Runs queue in the worker in submission order; the
 * provider actually used (`cuda` or `cpu`) is known once `open` resolves.
 */
export class OnnxSession {
  readonly provider: 'cuda' | 'cpu';
  readonly threads: number;
  readonly inputNames: string[];
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: Error | undefined;
  private closing: Promise<void> | undefined;

  private constructor(worker: Worker, provider: 'cuda' | 'cpu', threads: number, inputNames: string[]) {
    this.worker = worker;
    this.provider = provider;
    this.threads = threads;
    this.inputNames = inputNames;
    worker.on('message', (reply: WorkerReply) => this.onReply(reply));
    worker.on('error', (error) => this.fail(new CuilinkError('ENCODER_FAILED', `encoder worker failed: ${error.message}`, { cause: error })));
    worker.on('exit', (code) => {
      if (this.closing === undefined) this.fail(new CuilinkError('ENCODER_FAILED', `encoder worker exited with code ${code}`));
    });
  }

  static async open(modelPath: string, options: OnnxSessionOptions): Promise<OnnxSession> {
    const threads = options.threads ?? Math.min(4, availableParallelism());
    const spinning = options.spinning ?? process.env.CUILINK_ORT_SPINNING === '1';
    if (options.provider === 'cpu') return OnnxSession.start(modelPath, 'cpu', options.deviceId, threads, spinning);
    const missing = cudaProviderMissing();
    if (missing !== undefined) {
      if (options.provider === 'cuda') throw new CudaUnavailableError(missing);
      // No CUDA provider installed: the CPU is what this machine was set up for, not news (debug, once per process).
      once(`execution provider: cpu (auto: ${missing})`, options.debug ?? (() => {}));
      return OnnxSession.start(modelPath, 'cpu', options.deviceId, threads, spinning);
    }
    try {
      return await OnnxSession.start(modelPath, 'cuda', options.deviceId, threads, spinning);
    } catch (error) {
      const missingLibs = missingCudaLibraries();
      const reason = `onnxruntime could not start CUDA device ${options.deviceId}: ${(error as Error).message}${missingLibs.length > 0 ? ` (not on the loader path: ${missingLibs.join(', ')})` : ''}`;
      if (options.provider === 'cuda') throw new CudaUnavailableError(reason, error);
      // The CUDA provider is installed, so a GPU was meant: say why it is not used (once per process).
      once(`execution provider: cpu (auto: ${reason})`, options.log);
      return OnnxSession.start(modelPath, 'cpu', options.deviceId, threads, spinning);
    }
  }

  private static start(modelPath: string, provider: 'cuda' | 'cpu', deviceId: number, threads: number, spinning: boolean): Promise<OnnxSession> {
    const worker = spawnWorker();
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => {
        void worker.terminate();
        reject(error);
      };
      worker.once('error', onError);
      worker.once('message', (reply: WorkerReply) => {
        worker.off('error', onError);
        if (reply.type === 'ready') {
          resolve(new OnnxSession(worker, provider, threads, reply.inputNames));
        } else {
          void worker.terminate();
          reject(new CuilinkError('BAD_MODEL', `cannot load ${modelPath}: ${reply.type === 'error' ? reply.message : 'unexpected reply'}`));
        }
      });
      // Only the provider asked for: a silent CPU fallback inside onnxruntime would hide a broken GPU setup.
      const request: WorkerRequest = { type: 'init', modelPath, providers: [provider], deviceId, threads, spinning };
      worker.postMessage(request);
    });
  }

  run(feeds: FeedTensor[], outputName: string, pooling: Pooling, normalize: boolean): Promise<RunReply> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closing) return Promise.reject(new CuilinkError('ENCODER_CLOSED', 'the encoder is closed'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const request: WorkerRequest = { type: 'run', id, feeds, outputName, pooling, normalize };
      this.worker.postMessage(request, feeds.map((f) => f.data.buffer as ArrayBuffer));
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.worker.postMessage({ type: 'close' } satisfies WorkerRequest);
      await new Promise((r) => setTimeout(r, 20));
      await this.worker.terminate();
      this.fail(new CuilinkError('ENCODER_CLOSED', 'the encoder is closed'));
    })();
    return this.closing;
  }

  private onReply(reply: WorkerReply): void {
    if (reply.type === 'ready' || reply.id === undefined) return;
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    this.pending.delete(reply.id);
    if (reply.type === 'result') pending.resolve(reply);
    else pending.reject(new CuilinkError('ENCODER_FAILED', `inference failed: ${reply.message}`));
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }
}
