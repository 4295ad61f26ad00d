// Issue 26: the context cross-encoder's cost per pair is its length. How much window (characters a
// side) and how many tokens per pair (maxLength) it needs, under rerank.repeatWindow 'first' (the
// default), chosen on the tune split of NCBI-disease train only (dev streamed for speed, not scored).
//
// Rule, written before the first run: the manifest of the day (50 characters a side, maxLength 64) stays
// unless a variant with a smaller maxLength, or the same maxLength and a smaller window, reads tune
// acc@1 no lower than the shipped one's minus 2 mentions (of 917); among those the smallest
// maxLength wins, then the smallest window. Then the link cache's first pass over train + dev
// (bench/first-pass.ts), one round back to back: the default linker, the shipped window, the
// chosen one; issue 26's bar is ≥ 70% of the default's rate. No calibration in any row.
//   node --import tsx bench/context-window-size.ts [--first-pass] [--out FILE] [--index DIR]
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { evaluateCorpus, type OfflineEvalResult } from '../src/eval/offline-eval.ts';
import { openLinker } from '../src/link/open-linker.ts';
import { acc1Versus, CONTEXT_BENCH_FLAGS, contextFirstPass, openTuneBench, withWindow, writeResult } from './context-bench.ts';

const { values } = parseArgs({
  options: {
    ...CONTEXT_BENCH_FLAGS,
    context: { type: 'string', default: join('models', 'default', 'crossencoder-context') },
    out: { type: 'string', default: join('bench', 'results', 'context-window-size.json') },
  },
});
const { indexDir, view, tune } = await openTuneBench(values, 'context-window-size');
const cleanups: (() => void)[] = [];

interface Row {
  contextChars: number;
  maxLength: number;
  acc1: number;
  acc5: number;
  mrr: number;
  mentionsPerSecond: number;
  dir: string;
  result: OfflineEvalResult;
}

async function run(contextChars: number, maxLength: number): Promise<Row> {
  const { dir, cleanup } = withWindow(values.context, contextChars, maxLength);
  cleanups.push(cleanup);
  const core = await openLinker({ indexDir, provider: 'cpu', calibration: false, rerankerDir: dir, log: () => {} });
  try {
    const result = await evaluateCorpus(core, tune, view, { batchSize: 32 });
    const o = result.metrics.overall;
    const row = { contextChars, maxLength, acc1: o.acc1 ?? 0, acc5: o.acc5 ?? 0, mrr: o.mrr ?? 0, mentionsPerSecond: result.mentionsPerSecond, dir, result };
    console.log(`${String(contextChars).padStart(3)} chars a side, maxLength ${maxLength}: ${row.acc1.toFixed(4)} ${row.acc5.toFixed(4)} ${row.mrr.toFixed(4)}`);
    return row;
  } finally {
    await core.close();
  }
}

try {
  const rows: Row[] = [];
  for (const maxLength of [64, 48, 40]) for (const chars of [50, 35, 25]) rows.push(await run(chars, maxLength));
  const shipped = rows[0]!;
  const oneMention = 1 / shipped.result.mentions;
  const cheaper = rows.filter((r) => r !== shipped && r.acc1 >= shipped.acc1 - 2 * oneMention - 1e-9);
  cheaper.sort((a, b) => a.maxLength - b.maxLength || a.contextChars - b.contextChars);
  const chosen = cheaper[0] ?? shipped;
  const vs = (r: Row) => acc1Versus(shipped.result, r.result);
  console.log(`chosen: ${chosen.contextChars} characters a side, maxLength ${chosen.maxLength}`);
  const firstPass = values['first-pass']
    ? await contextFirstPass(values, indexDir, view, [
        { name: 'context cross-encoder, shipped window (50 a side, maxLength 64)', config: {}, rerankerDir: shipped.dir },
        ...(chosen === shipped ? [] : [{ name: `context cross-encoder, ${chosen.contextChars} a side, maxLength ${chosen.maxLength}`, config: {}, rerankerDir: chosen.dir }]),
      ])
    : null;
  const out = {
    benchmark: 'bench/context-window-size.ts',
    chosenOn: 'tune split of NCBI-disease train (seed 20261123), rerank.repeatWindow first; dev streamed for speed only, not scored',
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model },
    rule: 'the shipped 50 / 64 unless a variant with a smaller maxLength (or the same and a smaller window) is within 2 tune mentions of its acc@1; then smallest maxLength, then smallest window',
    chosen: { contextChars: chosen.contextChars, maxLength: chosen.maxLength },
    firstPass,
    rows: rows.map((r) => ({ contextChars: r.contextChars, maxLength: r.maxLength, acc1: r.acc1, acc5: r.acc5, mrr: r.mrr, vsShipped: r === shipped ? null : vs(r) })),
  };
  writeResult(values.out, out);
} finally {
  for (const cleanup of cleanups) cleanup();
}
