// npm run bench:accuracy — issue 14's accuracy fixes, each on and off, on the tune split of
// NCBI-disease train (where every setting was chosen) and on dev (reported, never used to choose),
// with approximate-randomization p-values (the test of `cuilink compare`) against the old
// default, the NIL threshold calibrated on tune for a stated NIL precision, and mentions/s of the
// old and new default from the same run. Writes bench/results/accuracy-ablation.json.
//   --sweep: the tune-split grid that chose the defaults instead (bench/results/accuracy-tuning.json)
//   --index DIR (default: the bench MEDIC index, built if missing) --out FILE --shuffles N
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cpus } from 'node:os';
import { loadPubTatorCorpus, type GoldCorpus } from '../src/eval/gold.ts';
import { kbOntologyView, loadIndexKb } from '../src/eval/kb-ontology-view.ts';
import { evaluateCorpus, keepSplitPart, type OfflineEvalResult } from '../src/eval/offline-eval.ts';
import { approximateRandomization, pairPredictions } from '../src/eval/randomization-test.ts';
import { TUNING_SPLIT_SEED } from '../src/eval/tuning-split.ts';
import type { ScoredMention } from '../src/eval/metrics/mention-record.ts';
import { openLinker, DEFAULT_RERANKER_DIR } from '../src/link/open-linker.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { ensureBenchIndex } from './bench-index.ts';
import { MEDIC_KB_FLAGS, medicKb } from './medic-kb.ts';

const SHARED = join('..', 'shared', 'data');
const { values } = parseArgs({
  options: {
    ...MEDIC_KB_FLAGS,
    train: { type: 'string', default: join(SHARED, 'ncbi-disease', 'NCBItrainset_corpus.txt') },
    dev: { type: 'string', default: join(SHARED, 'ncbi-disease', 'NCBIdevelopset_corpus.txt') },
    index: { type: 'string' },
    out: { type: 'string' },
    sweep: { type: 'boolean', default: false },
    /** Throughput only: old and new default (and cheaper variants) back to back, median of --rounds. */
    throughput: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '3' },
    /** Only the sweep rows whose name matches this regular expression. */
    only: { type: 'string' },
    shuffles: { type: 'string', default: '10000' },
    'nil-precision': { type: 'string', default: '0.5' },
  },
});
const medic = medicKb(values);
for (const file of [...medic.files, values.train, values.dev]) {
  if (!existsSync(file)) {
    console.error(`bench:accuracy: ${file} not found (the benchmark needs ../shared/data)`);
    process.exit(2);
  }
}

/** The linker before issue 14: no query fixes, no hierarchy preference, the old rerank block. */
const OLD_DEFAULT = {
  query: { loose: false, headNouns: [], unqualified: false, inheritance: false, composite: false, abbreviationsInside: false, xrefNames: false },
  hierarchy: { penalty: 0 },
  rerank: { policy: 'ambiguous', candidates: 5, margin: 0.05, weight: 0.1 },
};
OLD_DEFAULT.query = { ...OLD_DEFAULT.query, sparseWeight: 0 } as typeof OLD_DEFAULT.query;
const ABLATIONS: { system: string; config: Record<string, unknown> }[] = [
  { system: 'old default (before issue 14)', config: OLD_DEFAULT },
  { system: 'new default', config: {} },
  { system: '- loose name key', config: { query: { loose: false } } },
  { system: '+ eponym head nouns (off by default)', config: { query: { headNouns: ['disease', 'syndrome'] } } },
  { system: '- unqualified-name lookup', config: { query: { unqualified: false } } },
  { system: '- inheritance modes as "hereditary"', config: { query: { inheritance: false } } },
  { system: '- composite readings', config: { query: { composite: false } } },
  { system: '- names from other vocabularies (xref names)', config: { query: { xrefNames: false } } },
  { system: '- abbreviations inside/nested/initials/mentions', config: { query: { abbreviationsInside: false } } },
  { system: '- hierarchy preference', config: { hierarchy: { penalty: 0 } } },
  { system: '- sparse fusion', config: { query: { sparseWeight: 0 } } },
  { system: '- rerank retune (old weight 0.1, margin 0.05)', config: { rerank: { weight: 0.1, margin: 0.05 } } },
  { system: '+ abbreviation inventory (off by default)', config: { query: { abbreviationInventory: true } } },
  { system: '- reranker', config: { rerank: { policy: 'never' } } },
];
const SWEEP: { system: string; config: Record<string, unknown> }[] = [
  ...[0.05, 0.2, 0.3, 0.4, 0.5, 0.7, 1].map((weight) => ({ system: `rerank weight ${weight}`, config: { rerank: { weight } } })),
  ...[3, 10].map((candidates) => ({ system: `rerank candidates ${candidates}`, config: { rerank: { candidates } } })),
  ...[0.02, 0.1].map((margin) => ({ system: `rerank margin ${margin}`, config: { rerank: { margin } } })),
  ...[10, 40].map((retrieveK) => ({ system: `retrieveK ${retrieveK}`, config: { retrieveK } })),
  ...[0.01, 0.05].map((penalty) => ({ system: `hierarchy penalty ${penalty}`, config: { hierarchy: { penalty } } })),
  { system: 'hierarchy preferred name only', config: { hierarchy: { ancestor: false } } },
  { system: 'hierarchy ancestor only', config: { hierarchy: { preferredName: false } } },
  ...[0.1, 0.2, 0.3, 0.4, 0.5].map((sparseWeight) => ({ system: `sparse weight ${sparseWeight}`, config: { query: { sparseWeight } } })),
  // Second round: the two that moved tune acc@1 in the first, together.
  ...[
    [0.3, 0.2, 0.05],
    [0.3, 0.3, 0.05],
    [0.4, 0.3, 0.05],
    [0.3, 0.3, 0.1],
  ].map(([sparseWeight, weight, margin]) => ({ system: `sparse ${sparseWeight} + rerank weight ${weight} margin ${margin}`, config: { query: { sparseWeight }, rerank: { weight, margin } } })),
  { system: 'abbreviation inventory on', config: { query: { abbreviationInventory: true } } },
  // Issue 15: the cross-encoder is most of a first pass's cost; fewer candidates and a tighter margin, on tune.
  ...[2, 3, 5].flatMap((candidates) => [0.02, 0.05, 0.1].map((margin) => ({ system: `rerank grid candidates ${candidates} margin ${margin}`, config: { rerank: { candidates, margin } } }))),
];

const { indexDir } = ensureBenchIndex({ ...medic, modelDir: DEFAULT_MODEL_DIR, indexDir: values.index, rebuild: false, provider: 'cpu', log: console.log });
const view = kbOntologyView(await loadIndexKb(indexDir));
const train = await loadPubTatorCorpus(values.train);
const tune: GoldCorpus = { ...train, notes: [...train.notes], gold: new Map(train.gold) };
keepSplitPart(tune, 'tune', TUNING_SPLIT_SEED);
const dev = await loadPubTatorCorpus(values.dev);

/** CPU seconds (all threads of the process) of the last run's linking: steadier than wall time on a shared machine. */
let lastCpuSeconds = 0;

async function run(config: Record<string, unknown>, corpus: GoldCorpus): Promise<OfflineEvalResult> {
  const core = await openLinker({ indexDir, rerankerDir: existsSync(join(DEFAULT_RERANKER_DIR, 'manifest.json')) ? DEFAULT_RERANKER_DIR : false, provider: 'cpu', config });
  try {
    await core.linkNotes(corpus.notes.slice(0, 2)); // warm-up
    core.invalidateCache(); // the warm-up's notes are measured too: not as cache hits
    const cpu = process.cpuUsage();
    const result = await evaluateCorpus(core, corpus, view, { batchSize: 32 });
    const used = process.cpuUsage(cpu);
    lastCpuSeconds = (used.user + used.system) / 1e6;
    return result;
  } finally {
    await core.close();
  }
}

/** NIL precision and recall when every mention whose top score is below `threshold` is NIL. */
function nilAt(scored: readonly ScoredMention[], threshold: number): { precision: number | null; recall: number | null; nilRate: number } {
  let predicted = 0;
  let correct = 0;
  let gold = 0;
  for (const s of scored) {
    const nil = s.topScore < threshold;
    if (nil) predicted++;
    if (s.scores.goldNil) gold++;
    if (nil && s.scores.goldNil) correct++;
  }
  return { precision: predicted > 0 ? correct / predicted : null, recall: gold > 0 ? correct / gold : null, nilRate: predicted / scored.length };
}

/** The highest threshold whose NIL precision on `scored` is at least `target` (0: NIL off). */
function calibrateNil(scored: readonly ScoredMention[], target: number): number {
  const candidates = [...new Set(scored.map((s) => s.topScore))].sort((a, b) => a - b);
  let chosen = 0;
  for (const score of candidates) {
    const threshold = score + 1e-9;
    const at = nilAt(scored, threshold);
    if (at.precision !== null && at.precision >= target && (at.recall ?? 0) > 0) chosen = threshold;
  }
  return chosen;
}

const row = (system: string, split: string, r: OfflineEvalResult) => ({
  system, split, n: r.mentions, acc1: r.metrics.overall.acc1, acc5: r.metrics.overall.acc5, mrr: r.metrics.overall.mrr, mentionsPerSecond: r.mentionsPerSecond,
});
const fmt = (x: number | null | undefined) => (x === null || x === undefined ? '  -  ' : x.toFixed(3));
const shuffles = Number(values.shuffles);
const meta = { date: new Date().toISOString(), machine: { cpus: cpus().length, model: cpus()[0]?.model }, index: indexDir, tuneSplit: { corpus: values.train, seed: TUNING_SPLIT_SEED, documents: tune.notes.length, mentions: tune.gold.size } };

if (values.sweep) {
  const base = await run({}, tune);
  const rows = [row('current defaults', 'tune', base)];
  const only = values.only === undefined ? undefined : new RegExp(values.only);
  for (const s of SWEEP.filter((x) => !only || only.test(x.system))) rows.push(row(s.system, 'tune', await run(s.config, tune)));
  console.log('tune split: system'.padEnd(44) + 'acc@1  acc@5  MRR    mentions/s');
  for (const r of rows) console.log(r.system.padEnd(44) + `${fmt(r.acc1)}  ${fmt(r.acc5)}  ${fmt(r.mrr)}  ${r.mentionsPerSecond.toFixed(0)}`);
  const outFile = values.out ?? join('bench', 'results', 'accuracy-tuning.json');
  mkdirSync(join(outFile, '..'), { recursive: true });
  // A partial sweep (--only) adds its rows to the file, each run's rows tagged with its date and current defaults.
  const old = existsSync(outFile) ? (JSON.parse(readFileSync(outFile, 'utf8')) as { runs?: unknown[]; rows?: unknown[] }) : {};
  const previous = old.runs ?? (old.rows ? [old] : []);
  const runs = [...previous, { ...meta, only: values.only ?? null, rows }];
  writeFileSync(outFile, `${JSON.stringify({ benchmark: 'bench:accuracy --sweep', chosenOn: 'tune split of NCBI-disease train', runs }, null, 2)}\n`);
  console.log(`wrote ${outFile}`);
  process.exit(0);
}

if (values.throughput) {
  const systems = [
    { system: 'old default (before issue 14)', config: OLD_DEFAULT },
    { system: 'new default', config: {} },
    { system: 'new default, sparsePool 1', config: { query: { sparsePool: 1 } } },
  ];
  const perSystem = systems.map(() => [] as number[]);
  const perCpu = systems.map(() => [] as number[]);
  const accuracy = systems.map(() => ({ acc1: 0, acc5: 0 }));
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [i, s] of systems.entries()) {
      const r = await run(s.config, dev);
      perSystem[i]!.push(r.mentionsPerSecond);
      perCpu[i]!.push(r.mentions / lastCpuSeconds);
      accuracy[i] = { acc1: r.metrics.overall.acc1 ?? 0, acc5: r.metrics.overall.acc5 ?? 0 };
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const rows = systems.map((s, i) => ({
    system: s.system, mentionsPerSecond: perSystem[i]!, median: median(perSystem[i]!), ratioToOld: median(perSystem[i]!) / median(perSystem[0]!),
    mentionsPerCpuSecond: perCpu[i]!, medianPerCpuSecond: median(perCpu[i]!), cpuRatioToOld: median(perCpu[i]!) / median(perCpu[0]!), dev: accuracy[i],
  }));
  for (const r of rows) console.log(`${r.system.padEnd(40)} wall: median ${r.median.toFixed(0)} mentions/s (${r.mentionsPerSecond.map((x) => x.toFixed(0)).join(', ')}), ×${r.ratioToOld.toFixed(2)}; CPU: ${r.medianPerCpuSecond.toFixed(0)} mentions per CPU-second, ×${r.cpuRatioToOld.toFixed(2)} of the old default`);
  const outFile = values.out ?? join('bench', 'results', 'accuracy-throughput.json');
  writeFileSync(outFile, `${JSON.stringify({ benchmark: 'bench:accuracy --throughput', note: 'NCBI-disease dev, the systems interleaved in one process, medians of the rounds; shared 2-core machine, compare ratios only', ...meta, rounds: Number(values.rounds), rows }, null, 2)}\n`);
  console.log(`wrote ${outFile}`);
  process.exit(0);
}

const results: { system: string; tune: OfflineEvalResult; dev: OfflineEvalResult }[] = [];
for (const a of ABLATIONS) results.push({ system: a.system, tune: await run(a.config, tune), dev: await run(a.config, dev) });
const [old, current] = results as [(typeof results)[0], (typeof results)[0]];
const compare = (a: OfflineEvalResult, b: OfflineEvalResult) => {
  const c = approximateRandomization(pairPredictions(a.scored, b.scored), { shuffles, seed: 1 });
  const pick = (m: string) => c.metrics.find((x) => x.metric === m)!;
  return { acc1: { difference: pick('acc1').difference, pValue: pick('acc1').pValue }, acc5: { difference: pick('acc5').difference, pValue: pick('acc5').pValue }, mrr: { difference: pick('mrr').difference, pValue: pick('mrr').pValue } };
};
const nilTarget = Number(values['nil-precision']);
const nilThreshold = calibrateNil(current.tune.scored, nilTarget);
const table = results.map((r) => ({
  ...row(r.system, 'tune', r.tune),
  tune: row(r.system, 'tune', r.tune),
  dev: row(r.system, 'dev', r.dev),
  devVsOldDefault: r === old ? null : compare(old.dev, r.dev),
  tuneVsOldDefault: r === old ? null : compare(old.tune, r.tune),
}));
console.log('system'.padEnd(50) + 'tune acc@1 acc@5 | dev acc@1 acc@5  MRR   p(acc@1 vs old) | dev mentions/s');
for (const t of table) {
  console.log(t.system.padEnd(50) + `${fmt(t.tune.acc1)} ${fmt(t.tune.acc5)} | ${fmt(t.dev.acc1)} ${fmt(t.dev.acc5)} ${fmt(t.dev.mrr)}  ${t.devVsOldDefault ? t.devVsOldDefault.acc1.pValue!.toFixed(4) : '   -  '}  | ${t.dev.mentionsPerSecond.toFixed(0)}`);
}
const nil = { targetPrecision: nilTarget, thresholdChosenOnTune: nilThreshold, tune: nilAt(current.tune.scored, nilThreshold), dev: nilAt(current.dev.scored, nilThreshold) };
console.log(`NIL: threshold ${nilThreshold.toFixed(4)} for precision ≥ ${nilTarget} on tune; tune P/R ${fmt(nil.tune.precision)}/${fmt(nil.tune.recall)}, dev P/R ${fmt(nil.dev.precision)}/${fmt(nil.dev.recall)}`);
const throughputRatio = current.dev.mentionsPerSecond / old.dev.mentionsPerSecond;
console.log(`throughput new/old default on dev (same run): ${throughputRatio.toFixed(2)}`);
const outFile = values.out ?? join('bench', 'results', 'accuracy-ablation.json');
mkdirSync(join(outFile, '..'), { recursive: true });
writeFileSync(outFile, `${JSON.stringify({
  benchmark: 'bench:accuracy', settingsChosenOn: 'tune split of NCBI-disease train (bench/results/accuracy-tuning.json); dev reported only', ...meta,
  dev: { corpus: values.dev, mentions: dev.gold.size }, shuffles, systems: table, nil, throughputNewOverOld: throughputRatio,
}, null, 2)}\n`);
console.log(`wrote ${outFile}`);
