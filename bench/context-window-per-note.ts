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
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadPubTatorCorpus, type GoldCorpus } from '../src/eval/gold.ts';
import { kbOntologyView, loadIndexKb } from '../src/eval/kb-ontology-view.ts';
import { evaluateCorpus, keepSplitPart, type OfflineEvalResult } from '../src/eval/offline-eval.ts';
import { approximateRandomization, pairPredictions } from '../src/eval/randomization-test.ts';
import { TUNING_SPLIT_SEED } from '../src/eval/tuning-split.ts';
import { openLinker } from '../src/link/open-linker.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { ensureBenchIndex } from './bench-index.ts';
import { runFirstPass } from './first-pass.ts';
import { MEDIC_KB_FLAGS, medicKb, requireBenchFiles } from './medic-kb.ts';

const { values } = parseArgs({
  options: {
    ...MEDIC_KB_FLAGS,
    train: { type: 'string', default: join('..', 'shared', 'data', 'ncbi-disease', 'NCBItrainset_corpus.txt') },
    dev: { type: 'string', default: join('..', 'shared', 'data', 'ncbi-disease', 'NCBIdevelopset_corpus.txt') },
    context: { type: 'string', default: join('models', 'default', 'crossencoder-context') },
    index: { type: 'string' },
    'first-pass': { type: 'boolean', default: false },
    out: { type: 'string', default: join('bench', 'results', 'context-window-per-note.json') },
  },
});
const medic = medicKb(values);
requireBenchFiles('context-window-per-note', [...medic.files, values.train]);
const { indexDir } = ensureBenchIndex({ ...medic, modelDir: DEFAULT_MODEL_DIR, indexDir: values.index, rebuild: false, provider: 'cpu', log: console.log });
const view = kbOntologyView(await loadIndexKb(indexDir));
const tune: GoldCorpus = await loadPubTatorCorpus(values.train);
keepSplitPart(tune, 'tune', TUNING_SPLIT_SEED);

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

const versus = (base: Row, r: Row) => {
  const c = approximateRandomization(pairPredictions(base.result.scored, r.result.scored), { shuffles: 10000, seed: 1 });
  const acc1 = c.metrics.find((m) => m.metric === 'acc1')!;
  const differ = r.result.scored.filter((s, i) => s.scores.hit1 !== base.result.scored[i]!.scores.hit1);
  return { acc1Difference: acc1.difference, pValue: acc1.pValue, mentionsGained: differ.filter((s) => s.scores.hit1).length, mentionsLost: differ.filter((s) => !s.scores.hit1).length };
};

console.log(`${'tune split (917 mentions), no calibration'.padEnd(44)} acc@1  acc@5  MRR    reranked`);
const defaultRow = await run('default (ontology cross-encoder)', undefined, 'own');
const own = await run('context cross-encoder, own window', values.context, 'own');
const first = await run('context cross-encoder, first window per note', values.context, 'first');
const firstVsOwn = versus(own, first);
const chosen = firstVsOwn.mentionsGained - firstVsOwn.mentionsLost >= -2 ? 'first' : 'own';
console.log(`first vs own: ${JSON.stringify(firstVsOwn)} → ${chosen}`);

const firstPass = values['first-pass']
  ? await runFirstPass({
      open: { indexDir, provider: 'cpu', calibration: false },
      train: await loadPubTatorCorpus(values.train),
      dev: await loadPubTatorCorpus(values.dev),
      view,
      rounds: 1,
      settings: [
        { name: 'default', config: {} },
        { name: 'context cross-encoder, own window', config: { rerank: { repeatWindow: 'own' } }, rerankerDir: values.context },
        { name: 'context cross-encoder, first window per note', config: { rerank: { repeatWindow: 'first' } }, rerankerDir: values.context },
      ],
    })
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
  firstPass: firstPass && {
    note: 'NCBI-disease train + dev as one stream, cold cache, one round, settings back to back on a shared 2-core machine: compare ratios only',
    ownRatioToDefault: firstPass.results[1]!.medianMentionsPerSecond / firstPass.results[0]!.medianMentionsPerSecond,
    firstRatioToDefault: firstPass.results[2]!.medianMentionsPerSecond / firstPass.results[0]!.medianMentionsPerSecond,
    results: firstPass.results.map((r) => ({ name: r.name, mentionsPerSecond: r.medianMentionsPerSecond, worstCaseMentionsPerSecond: r.medianWorstCaseMentionsPerSecond, hitRatio: r.hitRatio })),
  },
  rows: [defaultRow, own, first].map(({ result: _result, ...r }) => r),
};
mkdirSync(join(values.out, '..'), { recursive: true });
writeFileSync(values.out, `${JSON.stringify(out, null, 2)}\n`);
console.log(`wrote ${values.out}`);
