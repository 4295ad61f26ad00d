// Issue 26: which window a context-reading cross-encoder reads for a mention repeated in its note
// (rerank.repeatWindow): each occurrence's own, or the first occurrence's (then the note reranks
// the mention once and the link cache answers its repeats). Chosen on the tune split of
// NCBI-disease train only; dev is streamed for speed, never scored here.
//
// Rule, written before the first run: `first` becomes the default if, with the opt-in context
// cross-encoder at its chosen settings, tune acc@1 under `first` is not lower than under `own` by
// more than 2 mentions (of 917); else `own` stays. Throughput: the link cache's first pass over
// NCBI-disease train + dev as one stream (bench/first-pass.ts), one round, back to back, against
// the default linker (ontology cross-encoder); issue 26's bar is ≥ 70% of the default's rate.
// Rows link with no calibration (NIL would differ by calibration, not by ranking).
//   node --import tsx bench/context-window-per-note.ts [--first-pass] [--out FILE] [--index DIR]
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
    out: { type: 'string', default: join('bench', 'results', 'context-window-per-note.json') },
  },
});
const { indexDir, view, tune } = await openTuneBench(values, 'context-window-per-note');

interface Row {
  system: string;
  acc1: number;
  acc5: number;
  mrr: number;
  reranked: number;
  result: OfflineEvalResult;
}

async function run(system: string, rerankerDir: string | undefined, repeatWindow: 'own' | 'first'): Promise<Row> {
  const core = await openLinker({ indexDir, provider: 'cpu', calibration: false, log: () => {}, ...(rerankerDir ? { rerankerDir } : {}), config: { rerank: { repeatWindow } } });
  try {
    const result = await evaluateCorpus(core, tune, view, { batchSize: 32 });
    const o = result.metrics.overall;
    const row = { system, acc1: o.acc1 ?? 0, acc5: o.acc5 ?? 0, mrr: o.mrr ?? 0, reranked: result.linked.filter((m) => m.reranked).length, result };
    console.log(`${system.padEnd(44)} ${row.acc1.toFixed(4)} ${row.acc5.toFixed(4)} ${row.mrr.toFixed(4)} ${row.reranked}`);
    return row;
  } finally {
    await core.close();
  }
}

const versus = (base: Row, r: Row) => acc1Versus(base.result, r.result);

console.log(`${'tune split (917 mentions), no calibration'.padEnd(44)} acc@1  acc@5  MRR    reranked`);
const defaultRow = await run('default (ontology cross-encoder)', undefined, 'own');
const own = await run('context cross-encoder, own window', values.context, 'own');
const first = await run('context cross-encoder, first window per note', values.context, 'first');
const firstVsOwn = versus(own, first);
const chosen = firstVsOwn.mentionsGained - firstVsOwn.mentionsLost >= -2 ? 'first' : 'own';
console.log(`first vs own: ${JSON.stringify(firstVsOwn)} → ${chosen}`);

const firstPass = values['first-pass']
  ? await contextFirstPass(values, indexDir, view, [
      { name: 'context cross-encoder, own window', config: { rerank: { repeatWindow: 'own' } }, rerankerDir: values.context },
      { name: 'context cross-encoder, first window per note', config: { rerank: { repeatWindow: 'first' } }, rerankerDir: values.context },
    ])
  : null;
const out = {
  benchmark: 'bench/context-window-per-note.ts',
  chosenOn: 'tune split of NCBI-disease train (seed 20261123); dev streamed for speed only, not scored',
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model },
  rule: "'first' if its tune acc@1 is not lower than 'own' by more than 2 mentions (context cross-encoder, chosen settings); else 'own'",
  chosen,
  firstVsOwn,
  vsDefault: { own: versus(defaultRow, own), first: versus(defaultRow, first) },
  firstPass,
  rows: [defaultRow, own, first].map(({ result: _result, ...r }) => r),
};
writeResult(values.out, out);
