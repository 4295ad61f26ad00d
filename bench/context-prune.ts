// Issue 26: rerank pruning (rerank.prune) with the context cross-encoder. Pruning scores each
// candidate that can still come first in its own model run (int8: each pair alone, so the top-1
// equals scoring them all), in rounds; without it a mention's top 3 go through one run. With pairs
// 2–3× longer than the default model's, which is cheaper is measured, not assumed. Tune split of
// NCBI-disease train only (dev streamed for speed, not scored).
//
// Rule, written before the first run: if `prune: false` reads tune acc@1 within 2 mentions of
// `prune: true` (int8 batches differ, so links may move) and its first pass is faster in the same
// run, the linker stops pruning for cross-encoders that read the note; else nothing changes.
//   node --import tsx bench/context-prune.ts [--out FILE] [--index DIR]
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { evaluateCorpus, type OfflineEvalResult } from '../src/eval/offline-eval.ts';
import { openLinker } from '../src/link/open-linker.ts';
import { acc1Versus, CONTEXT_BENCH_FLAGS, contextFirstPass, openTuneBench, writeResult } from './context-bench.ts';

const { values } = parseArgs({
  options: {
    ...CONTEXT_BENCH_FLAGS,
    context: { type: 'string', default: join('models', 'default', 'crossencoder-context') },
    out: { type: 'string', default: join('bench', 'results', 'context-prune.json') },
  },
});
const { indexDir, view, tune } = await openTuneBench(values, 'context-prune');

async function run(prune: boolean): Promise<OfflineEvalResult> {
  const core = await openLinker({ indexDir, provider: 'cpu', calibration: false, rerankerDir: values.context, log: () => {}, config: { rerank: { prune } } });
  try {
    const result = await evaluateCorpus(core, tune, view, { batchSize: 32 });
    console.log(`prune ${prune}: acc@1 ${result.metrics.overall.acc1?.toFixed(4)}`);
    return result;
  } finally {
    await core.close();
  }
}

const pruned = await run(true);
const whole = await run(false);
const versus = acc1Versus(pruned, whole);
const firstPass = await contextFirstPass(values, indexDir, view, [
  { name: 'context cross-encoder, prune true', config: { rerank: { prune: true } }, rerankerDir: values.context },
  { name: 'context cross-encoder, prune false', config: { rerank: { prune: false } }, rerankerDir: values.context },
]);
const faster = firstPass.results[2]!.mentionsPerSecond > firstPass.results[1]!.mentionsPerSecond;
const chosen = versus.mentionsGained - versus.mentionsLost >= -2 && faster ? 'no pruning for context-reading cross-encoders' : 'unchanged';
console.log(`prune false vs true: ${JSON.stringify(versus)}; faster: ${faster} → ${chosen}`);
writeResult(values.out, {
  benchmark: 'bench/context-prune.ts',
  chosenOn: 'tune split of NCBI-disease train (seed 20261123), rerank.repeatWindow first; dev streamed for speed only, not scored',
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model },
  rule: 'prune false for context-reading cross-encoders if its tune acc@1 is within 2 mentions of prune true and its first pass is faster in the same run',
  chosen,
  tune: { pruneTrue: pruned.metrics.overall.acc1, pruneFalse: whole.metrics.overall.acc1, pruneFalseVsTrue: versus },
  firstPass,
});
