// Issue 26: how the linker uses the context-reading cross-encoder, chosen on the tune split of
// NCBI-disease train only (no dev accuracy is computed here). Every row links the tune split with the real
// linker (bench index, int8 on CPU) and no confidence calibration (a calibration is fit for one
// pair of models; NIL would differ by model, not by ranking): acc@1 / acc@5 / MRR and the pairs
// the cross-encoder scored. Rows: the previous default (ontology-trained cross-encoder, its tuned
// settings), the new model over a grid of policy × candidates × weight (with the cross-encoder
// pairs each asks for, before pruning: reranked mentions × candidates), and ablations at the
// chosen setting: the model's window from 0 (same weights, no context) to 200 characters a side,
// the previous model at the new setting, and no reranker; with --first-pass, the throughput of
// the link cache's first pass (bench/first-pass.ts) against the previous default.
// Its results (2026-11-26) were measured with the model's manifest at maxLength 64 and each
// occurrence in its own window (pinned below); the manifest reads 48 since 2026-11-27
// (bench/context-window-size.ts), which moves a few grid rows by a mention.
//   node --import tsx bench/context-rerank-tuning.ts [--reranker DIR] [--only REGEX] [--first-pass] [--out FILE] [--index DIR]
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadPubTatorCorpus } from '../src/eval/gold.ts';
import { evaluateCorpus, type OfflineEvalResult } from '../src/eval/offline-eval.ts';
import { approximateRandomization, pairPredictions } from '../src/eval/randomization-test.ts';
import { openLinker } from '../src/link/open-linker.ts';
import type { LinkConfigInput } from '../src/link/link-config.ts';
import { CONTEXT_BENCH_FLAGS, openTuneBench, withWindow } from './context-bench.ts';
import { runFirstPass } from './first-pass.ts';

const { values } = parseArgs({
  options: {
    ...CONTEXT_BENCH_FLAGS,
    reranker: { type: 'string', default: join('models', 'default', 'crossencoder-context') },
    previous: { type: 'string', default: join('models', 'default', 'crossencoder') },
    only: { type: 'string' },
    out: { type: 'string', default: join('bench', 'results', 'context-rerank-tuning.json') },
  },
});
const { indexDir, view, tune } = await openTuneBench(values, 'context-rerank-tuning');
/** Its rows (2026-11-26) read each occurrence of a mention in its own window: kept so that they reproduce. */
const OWN_WINDOW = { repeatWindow: 'own' } as const;

/** The previous default's rerank block (src/link/link-config.ts before issue 26). */
const PREVIOUS = { policy: 'ambiguous', candidates: 3, margin: 0.05, weight: 0.3 } as const;

interface Row {
  system: string;
  reranker: string | null;
  config: LinkConfigInput;
  acc1: number;
  acc5: number;
  mrr: number;
  pairsAsked: number;
  mentionsPerSecond: number;
  result: OfflineEvalResult;
}

async function run(system: string, rerankerDir: string | false, config: LinkConfigInput): Promise<Row> {
  const core = await openLinker({ indexDir, rerankerDir, provider: 'cpu', calibration: false, config: { ...config, rerank: { ...config.rerank, ...OWN_WINDOW } }, log: () => {} });
  try {
    const result = await evaluateCorpus(core, tune, view, { batchSize: 32 });
    // Pairs before pruning: what the setting asks the cross-encoder for (pruning scores fewer).
    const pairs = result.linked.filter((m) => m.reranked).length * (config.rerank?.candidates ?? 3);
    const o = result.metrics.overall;
    const row = { system, reranker: rerankerDir === false ? null : rerankerDir, config, acc1: o.acc1 ?? 0, acc5: o.acc5 ?? 0, mrr: o.mrr ?? 0, pairsAsked: pairs, mentionsPerSecond: result.mentionsPerSecond, result };
    console.log(`${system.padEnd(58)} ${row.acc1.toFixed(4)} ${row.acc5.toFixed(4)} ${row.mrr.toFixed(4)} ${String(Math.round(result.mentionsPerSecond)).padStart(5)}/s`);
    return row;
  } finally {
    await core.close();
  }
}

const only = values.only === undefined ? undefined : new RegExp(values.only);
const wanted = (name: string) => !only || only.test(name);
const rows: Row[] = [];
console.log(`${'tune split (917 mentions), no calibration'.padEnd(58)} acc@1  acc@5  MRR    mentions/s`);
const previous = await run('previous default (ontology cross-encoder)', values.previous, { rerank: PREVIOUS });
rows.push(previous);
const grid: { system: string; config: LinkConfigInput }[] = [];
for (const policy of ['ambiguous', 'inexact', 'always'] as const) {
  for (const candidates of [3, 5, 10]) {
    for (const weight of [0.3, 0.5, 0.7, 0.9]) grid.push({ system: `context ${policy} candidates ${candidates} weight ${weight}`, config: { rerank: { policy, candidates, weight, margin: PREVIOUS.margin } } });
  }
}
for (const g of grid.filter((x) => wanted(x.system))) rows.push(await run(g.system, values.reranker, g.config));
// The chosen setting: best acc@1, then fewer pairs (cheaper), then grid order.
const contextRows = rows.filter((r) => r.reranker === values.reranker);
const best = [...contextRows].sort((a, b) => b.acc1 - a.acc1 || a.pairsAsked - b.pairsAsked)[0];
if (best) {
  // The window the manifest reads, at the chosen setting: none, and 25 to 200 characters a side
  // (maxLength grown with it so the window is not cut at token level).
  for (const [chars, maxLength] of [[0, 64], [25, 64], [50, 64], [50, 96], [100, 128], [200, 192]] as const) {
    const name = `window: chosen setting, ${chars} characters a side, maxLength ${maxLength}`;
    if (!wanted(name) && chars !== 0) continue;
    const variant = withWindow(values.reranker, chars, maxLength);
    try {
      rows.push(await run(chars === 0 ? 'ablation: chosen setting, same model reading no context' : name, variant.dir, best.config));
    } finally {
      variant.cleanup();
    }
  }
  rows.push(await run('ablation: chosen setting, previous model', values.previous, best.config));
  rows.push(await run('ablation: no reranker', false, { rerank: { policy: 'never' } }));
}
// Throughput of the previous default and the context cross-encoder at the chosen setting: the
// link cache's first pass over NCBI-disease train + dev as one stream (bench/first-pass.ts), one
// round, the settings back to back. Speed only: dev links are not scored here.
const firstPass = values['first-pass'] && best
  ? await runFirstPass({
      open: { indexDir, provider: 'cpu', rerankerDir: values.reranker, calibration: false },
      train: await loadPubTatorCorpus(values.train),
      dev: await loadPubTatorCorpus(values.dev),
      view,
      rounds: 1,
      settings: [
        { name: 'previous default', config: { rerank: PREVIOUS }, rerankerDir: values.previous },
        { name: 'context cross-encoder, chosen setting', config: { rerank: { ...best.config.rerank, ...OWN_WINDOW } } },
        { name: 'context cross-encoder, chosen setting, no link cache', config: { rerank: { ...best.config.rerank, ...OWN_WINDOW }, cache: { maxEntries: 0 } } },
      ],
    })
  : null;
const vsPrevious = (r: Row) => {
  const c = approximateRandomization(pairPredictions(previous.result.scored, r.result.scored), { shuffles: 10000, seed: 1 });
  const acc1 = c.metrics.find((m) => m.metric === 'acc1')!;
  return { acc1Difference: acc1.difference, pValue: acc1.pValue, mentionsGained: Math.round((acc1.difference ?? 0) * r.result.mentions) };
};
const out = {
  benchmark: 'bench/context-rerank-tuning.ts',
  chosenOn: 'tune split of NCBI-disease train (seed 20261123); no calibration in any row; dev not read',
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, model: cpus()[0]?.model },
  rule: 'highest tune acc@1; ties → fewer cross-encoder pairs; a difference of ≤ 4 mentions from the previous default is no effect',
  chosen: best ? { system: best.system, config: best.config, vsPrevious: vsPrevious(best) } : null,
  firstPass: firstPass && {
    note: 'NCBI-disease train + dev as one stream, cold cache, one round, settings back to back on a shared 2-core machine: compare ratios only',
    ratioToPrevious: firstPass.results[1]!.medianMentionsPerSecond / firstPass.results[0]!.medianMentionsPerSecond,
    results: firstPass.results.map((r) => ({ name: r.name, mentionsPerSecond: r.medianMentionsPerSecond, worstCaseMentionsPerSecond: r.medianWorstCaseMentionsPerSecond, hitRatio: r.hitRatio })),
  },
  rows: rows.map(({ result, ...r }) => ({ ...r, reranker: r.reranker && r.reranker.startsWith(tmpdir()) ? '(the same files under a temporary manifest)' : r.reranker, vsPrevious: r === previous ? null : vsPrevious({ ...r, result }) })),
};
mkdirSync(join(values.out, '..'), { recursive: true });
writeFileSync(values.out, `${JSON.stringify(out, null, 2)}\n`);
console.log(`chosen: ${best?.system} (${JSON.stringify(best?.config)}); wrote ${values.out}`);
