// Worker-thread side of OnnxSession: owns one onnxruntime-node session, because session.run
// blocks its thread for the whole inference and the main thread must keep serving Kafka
// heartbeats and HTTP probes.
import { parentPort } from 'node:worker_threads';
import ort from 'onnxruntime-node';
import { outputAsFloat32, poolHidden } from './pooling.ts';
import type { InitRequest, RunRequest, WorkerReply, WorkerRequest } from './onnx-worker-protocol.ts';

const port = parentPort!;
let session: ort.InferenceSession | undefined;
let queue: Promise<void> = Promise.resolve();
let closing = false;

function reply(message: WorkerReply, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

async function init(request: InitRequest): Promise<void> {
  const executionProviders = request.providers.map((p) => (p === 'cuda' ? { name: 'cuda', deviceId: request.deviceId } : 'cpu'));
  session = await ort.InferenceSession.create(request.modelPath, {
    executionProviders,
    graphOptimizationLevel: 'all',
    intraOpNumThreads: request.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    // Spinning intra-op threads steal the cores the other sessions and the main thread need on a
    // small machine: measured 1.6x more mentions/s on 2 cores without it (docs/gpu.md).
    extra: { session: { intra_op: { allow_spinning: request.spinning ? '1' : '0' } } },
  });
  reply({ type: 'ready', inputNames: [...session.inputNames], outputNames: [...session.outputNames] });
}

async function run(request: RunRequest): Promise<void> {
  const feeds: Record<string, ort.Tensor> = {};
  for (const f of request.feeds) feeds[f.name] = new ort.Tensor('int64', f.data, f.dims);
  const t0 = performance.now();
  const outputs = await session!.run(feeds, [request.outputName]);
  const runMs = performance.now() - t0;
  const output = outputs[request.outputName]!;
  const dims = [...output.dims];
  let data = outputAsFloat32(output.type, output.data, request.outputName);
  if (request.pooling !== 'none') {
    const [batch, seq, width] = dims as [number, number, number];
    // Only mean pooling reads the mask: a CLS-pooling model may take no attention_mask input.
    const mask = request.feeds.find((f) => f.name === 'attention_mask')?.data;
    data = poolHidden(data, mask, batch, seq, width, request.pooling, request.normalize);
    dims.splice(1, 1);
  } else {
    data = Float32Array.from(data);
  }
  reply({ type: 'result', id: request.id, data, dims, runMs }, [data.buffer as ArrayBuffer]);
}

port.on('message', (request: WorkerRequest) => {
  if (request.type === 'close') {
    // After the run in progress (a thread ended inside a native run aborts the whole process);
    // the runs queued behind it are answered without running.
    closing = true;
    queue = queue.then(() => session?.release()).finally(() => process.exit(0));
    return;
  }
  if (request.type === 'exit') {
    // After the runs already queued: ending the thread inside a native run aborts the whole process.
    queue = queue.then(() => process.exit(request.code));
    return;
  }
  // One run at a time: concurrent runs on one session only fight over the same intra-op threads.
  queue = queue.then(async () => {
    if (request.type === 'init') return init(request);
    // A close that arrived while the previous run blocked this thread is handled before the next run starts.
    await new Promise((resolve) => setImmediate(resolve));
    if (closing) return reply({ type: 'error', id: request.id, message: 'the encoder is closed' });
    return run(request);
  });
  queue = queue.catch((error: unknown) => reply({ type: 'error', id: request.type === 'run' ? request.id : undefined, message: error instanceof Error ? error.message : String(error) }));
});
