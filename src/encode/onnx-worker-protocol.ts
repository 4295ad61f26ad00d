/** Messages between OnnxSession (main thread) and onnx-worker.ts (its worker thread). */
export type Pooling = 'mean' | 'cls' | 'none';

export interface InitRequest {
  type: 'init';
  modelPath: string;
  /** Execution providers to try, in order, as onnxruntime-node names them. */
  providers: ('cpu' | 'cuda')[];
  deviceId: number;
  threads: number;
  /** Let idle intra-op threads spin (onnxruntime's default) instead of sleeping. */
  spinning: boolean;
}

export interface InitReply {
  type: 'ready';
  inputNames: string[];
  outputNames: string[];
}

export interface FeedTensor {
  name: string;
  data: BigInt64Array;
  dims: [number, number];
}

export interface RunRequest {
  type: 'run';
  id: number;
  feeds: FeedTensor[];
  outputName: string;
  /** `mean` and `cls` reduce [batch, seq, hidden] to [batch, hidden] in the worker. */
  pooling: Pooling;
  normalize: boolean;
}

export interface RunReply {
  type: 'result';
  id: number;
  data: Float32Array;
  dims: number[];
  /** Milliseconds spent inside session.run. */
  runMs: number;
}

export interface ErrorReply {
  type: 'error';
  id?: number;
  message: string;
}

/** `exit`: the worker ends itself after the runs queued before it, as a crash would (drills, tests). */
export type WorkerRequest = InitRequest | RunRequest | { type: 'close' } | { type: 'exit'; code: number };
export type WorkerReply = InitReply | RunReply | ErrorReply;
