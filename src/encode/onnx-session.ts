import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { CuilinkError } from '../kb/errors.ts';
import { cudaProviderMissing, CudaUnavailableError, missingCudaLibraries, type ProviderChoice } from './execution-provider.ts';
import type { FeedTensor, Pooling, RunReply, WorkerReply, WorkerRequest } from './onnx-worker-protocol.ts';

/** How long close() waits for the run in progress before it cuts the worker (a run that never ends). */
const CLOSE_GRACE_MS = 60_000;

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
  /** How a dead worker is replaced (DEFAULT_RESTART_POLICY). */
  restart?: Partial<RestartPolicy>;
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

/** How a dead worker is replaced: consecutive failed restarts before the session gives up. */
export interface RestartPolicy {
  maxRestarts: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { maxRestarts: 5, initialBackoffMs: 200, maxBackoffMs: 5000 };

interface WorkerConfig {
  modelPath: string;
  provider: 'cuda' | 'cpu';
  deviceId: number;
  threads: number;
  spinning: boolean;
}

/** Every session not yet closed, so that a drill or a test can kill one's worker (`terminateWorker`). */
const openSessions = new Set<OnnxSession>();

/**
 * One ONNX model in its own worker thread. Runs queue in the worker in submission order; the
 * provider actually used (`cuda` or `cpu`) is known once `open` resolves.
 *
 * A worker that dies (a native crash, out of memory, terminated) is an internal fault, not the
 * input's: the runs it held are rejected with the retriable ENCODER_RESTARTING, a new worker is
 * started with exponential backoff, and runs asked for meanwhile wait for it. Only after
 * `maxRestarts` deaths or failed starts with no successful run in between does the session give
 * up: every run is then rejected with the non-retriable ENCODER_FAILED and `onFailed` listeners
 * are told (the stream stage exits non-zero without committing).
 */
export class OnnxSession {
  readonly provider: 'cuda' | 'cpu';
  readonly threads: number;
  readonly inputNames: string[];
  readonly outputNames: string[];
  /** Workers started after the first one died. */
  restarts = 0;
  private worker: Worker;
  /** The current worker has exited (a replacement not yet started, or none because the session closed meanwhile). */
  private workerExited = false;
  private readonly config: WorkerConfig;
  private readonly policy: RestartPolicy;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: Error | undefined;
  private closing: Promise<void> | undefined;
  /** Set while a replacement worker is being started; runs wait for it. */
  private restarting: Promise<void> | undefined;
  /** Deaths and failed starts since the last successful run. */
  private consecutiveFailures = 0;
  private readonly failedListeners: ((error: Error) => void)[] = [];

  private constructor(worker: Worker, config: WorkerConfig, inputNames: string[], outputNames: string[], policy: RestartPolicy) {
    this.config = config;
    this.provider = config.provider;
    this.threads = config.threads;
    this.inputNames = inputNames;
    this.outputNames = outputNames;
    this.policy = policy;
    this.worker = worker;
    this.attach(worker);
    openSessions.add(this);
  }

  /** Sessions not yet closed (drills, tests). */
  static openSessions(): OnnxSession[] {
    return [...openSessions];
  }

  static async open(modelPath: string, options: OnnxSessionOptions): Promise<OnnxSession> {
    const threads = options.threads ?? Math.min(4, availableParallelism());
    const spinning = options.spinning ?? process.env.CUILINK_ORT_SPINNING === '1';
    const base = { modelPath, deviceId: options.deviceId, threads, spinning };
    const policy = { ...DEFAULT_RESTART_POLICY, ...options.restart };
    if (options.provider === 'cpu') return OnnxSession.start({ ...base, provider: 'cpu' }, policy);
    const missing = cudaProviderMissing();
    if (missing !== undefined) {
      if (options.provider === 'cuda') throw new CudaUnavailableError(missing);
      // No CUDA provider installed: the CPU is what this machine was set up for, not news (debug, once per process).
      once(`execution provider: cpu (auto: ${missing})`, options.debug ?? (() => {}));
      return OnnxSession.start({ ...base, provider: 'cpu' }, policy);
    }
    try {
      return await OnnxSession.start({ ...base, provider: 'cuda' }, policy);
    } catch (error) {
      const missingLibs = missingCudaLibraries();
      const reason = `onnxruntime could not start CUDA device ${options.deviceId}: ${(error as Error).message}${missingLibs.length > 0 ? ` (not on the loader path: ${missingLibs.join(', ')})` : ''}`;
      if (options.provider === 'cuda') throw new CudaUnavailableError(reason, error);
      // The CUDA provider is installed, so a GPU was meant: say why it is not used (once per process).
      once(`execution provider: cpu (auto: ${reason})`, options.log);
      return OnnxSession.start({ ...base, provider: 'cpu' }, policy);
    }
  }

  private static async start(config: WorkerConfig, policy: RestartPolicy): Promise<OnnxSession> {
    const { worker, inputNames, outputNames } = await startWorker(config);
    return new OnnxSession(worker, config, inputNames, outputNames, policy);
  }

  /** False while a replacement worker is starting, and for good once the session gave up or closed. */
  get available(): boolean {
    return this.restarting === undefined && this.failure === undefined && this.closing === undefined;
  }

  /** Called once if the session gives up restarting its worker. */
  onFailed(listener: (error: Error) => void): void {
    this.failedListeners.push(listener);
  }

  async run(feeds: FeedTensor[], outputName: string, pooling: Pooling, normalize: boolean): Promise<RunReply> {
    if (this.restarting) await this.restarting;
    if (this.failure) throw this.failure;
    if (this.closing) throw new CuilinkError('ENCODER_CLOSED', 'the encoder is closed');
    const id = this.nextId++;
    const reply = await new Promise<RunReply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const request: WorkerRequest = { type: 'run', id, feeds, outputName, pooling, normalize };
      this.worker.postMessage(request, feeds.map((f) => f.data.buffer as ArrayBuffer));
    });
    this.consecutiveFailures = 0;
    return reply;
  }

  /**
   * Makes the current worker thread exit as a crash would, once the run it is in finishes (runs
   * queued behind it die with it); the session restarts it like any dead worker (drills, tests).
   * Resolves when the worker has exited. (Worker.terminate() during a native run aborts the process.)
   */
  async killWorker(): Promise<void> {
    // A worker being replaced has already exited: wait for its successor, or the exit never comes.
    if (this.restarting) await this.restarting;
    // Closed or given up: there is no worker left to exit.
    if (this.closing !== undefined || this.failure !== undefined) return;
    const worker = this.worker;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage({ type: 'exit', code: 70 } satisfies WorkerRequest);
    await exited;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      openSessions.delete(this);
      await this.restarting?.catch(() => {});
      const worker = this.worker;
      // A worker that died (given up on, or not replaced because of this close) has exited already:
      // no 'exit' would come to end the wait.
      if (this.failure === undefined && !this.workerExited) {
        const exited = new Promise<boolean>((resolve) => worker.once('exit', () => resolve(true)));
        worker.postMessage({ type: 'close' } satisfies WorkerRequest);
        // The worker exits after the run it is in: terminate() inside a native run aborts the whole
        // process (a stage draining on SIGTERM, a probe in flight). Only a run that never ends is cut.
        let timer: NodeJS.Timeout | undefined;
        const graceful = await Promise.race([exited, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CLOSE_GRACE_MS)))]);
        clearTimeout(timer);
        if (!graceful) await worker.terminate();
      }
      this.failure ??= new CuilinkError('ENCODER_CLOSED', 'the encoder is closed');
      this.rejectPending(this.failure);
    })();
    return this.closing;
  }

  private attach(worker: Worker): void {
    worker.on('message', (reply: WorkerReply) => this.onReply(reply));
    worker.on('error', (error) => this.onDeath(worker, `encoder worker failed: ${error.message}`));
    worker.on('exit', (code) => {
      if (worker === this.worker) this.workerExited = true;
      this.onDeath(worker, `encoder worker exited with code ${code}`);
    });
  }

  private onReply(reply: WorkerReply): void {
    if (reply.type === 'ready' || reply.id === undefined) return;
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    this.pending.delete(reply.id);
    if (reply.type === 'result') pending.resolve(reply);
    else if (this.closing !== undefined) pending.reject(new CuilinkError('ENCODER_CLOSED', 'the encoder is closed'));
    else pending.reject(new CuilinkError('INFERENCE_FAILED', `inference failed: ${reply.message}`));
  }

  private onDeath(worker: Worker, reason: string): void {
    if (worker !== this.worker || this.closing !== undefined || this.failure !== undefined) return;
    this.rejectPending(new CuilinkError('ENCODER_RESTARTING', `${reason}; restarting it`, { retriable: true }));
    this.restarting ??= this.restart(reason).finally(() => (this.restarting = undefined));
  }

  /** Starts replacement workers with exponential backoff until one is up or the policy gives up. */
  private async restart(reason: string): Promise<void> {
    let lastReason = reason;
    for (;;) {
      this.consecutiveFailures++;
      if (this.consecutiveFailures > this.policy.maxRestarts) {
        this.giveUp(new CuilinkError('ENCODER_FAILED', `encoder worker could not be kept running (${this.policy.maxRestarts} restarts without a successful run; last: ${lastReason})`));
        return;
      }
      const waitMs = Math.min(this.policy.maxBackoffMs, this.policy.initialBackoffMs * 2 ** (this.consecutiveFailures - 1));
      await new Promise((r) => setTimeout(r, waitMs));
      if (this.closing !== undefined) return;
      try {
        const { worker } = await startWorker(this.config);
        this.restarts++;
        this.worker = worker;
        this.workerExited = false;
        this.attach(worker);
        return;
      } catch (error) {
        lastReason = `restart failed: ${(error as Error).message}`;
      }
    }
  }

  private giveUp(error: CuilinkError): void {
    this.failure = error;
    this.rejectPending(error);
    for (const listener of this.failedListeners) listener(error);
  }

  private rejectPending(error: Error): void {
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }
}

/** Spawns a worker and loads the model in it; rejects (and ends the worker) when it cannot. */
function startWorker(config: WorkerConfig): Promise<{ worker: Worker; inputNames: string[]; outputNames: string[] }> {
  const worker = spawnWorker();
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      void worker.terminate();
      reject(error);
    };
    const onExit = (code: number) => reject(new CuilinkError('BAD_MODEL', `encoder worker exited with code ${code} while loading ${config.modelPath}`));
    worker.once('error', onError);
    worker.once('exit', onExit);
    worker.once('message', (reply: WorkerReply) => {
      worker.off('error', onError);
      worker.off('exit', onExit);
      if (reply.type === 'ready') {
        resolve({ worker, inputNames: reply.inputNames, outputNames: reply.outputNames });
      } else {
        void worker.terminate();
        reject(new CuilinkError('BAD_MODEL', `cannot load ${config.modelPath}: ${reply.type === 'error' ? reply.message : 'unexpected reply'}`));
      }
    });
    // Only the provider asked for: a silent CPU fallback inside onnxruntime would hide a broken GPU setup.
    const request: WorkerRequest = { type: 'init', modelPath: config.modelPath, providers: [config.provider], deviceId: config.deviceId, threads: config.threads, spinning: config.spinning };
    worker.postMessage(request);
  });
}
