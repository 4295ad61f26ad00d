// npm run bench:memory — NCBI-disease dev linked through `cuilink eval` with and without a
// labelled-mention memory built from NCBI-disease train, each with and without the reranker.
// Every memory weight is chosen first on the fixed tuning split of TRAIN (memory learned from the
// `learn` part, scored on the 100 `tune` documents; bench/memory-tuning.ts); dev is reported
// once, with the memory rebuilt from all of train. Writes bench/results/memory.json.
//   --tune (run the coordinate search; default: score the shipped defaults on tune only)
//   --reranker DIR|none  --corpus-train FILE  --corpus-dev FILE  --kb FILE  --out FILE
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadPubTatorCorpus } from '../src/eval/gold.ts';
import { kbOntologyView, loadIndexKb } from '../src/eval/kb-ontology-view.ts';
import { keepSplitPart } from '../src/eval/offline-eval.ts';
import { TUNING_SPLIT_SEED } from '../src/eval/tuning-split.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { DEFAULT_RERANKER_DIR } from '../src/link/open-linker.ts';
import { parseLinkConfig } from '../src/link/link-config.ts';
import { cli, ensureBenchIndex, portablePaths } from './bench-index.ts';
import { MEDIC_KB_FLAGS, medicKb, requireBenchFiles } from './medic-kb.ts';
import { tuneMemory } from './memory-tuning.ts';

const SHARED = join('..', 'shared', 'data');
const { values } = parseArgs({
  options: {
    ...MEDIC_KB_FLAGS,
    'corpus-train': { type: 'string', default: join(SHARED, 'ncbi-disease', 'NCBItrainset_corpus.txt') },
    'corpus-dev': { type: 'string', default: join(SHARED, 'ncbi-disease', 'NCBIdevelopset_corpus.txt') },
    reranker: { type: 'string', default: DEFAULT_RERANKER_DIR },
    tune: { type: 'boolean', default: false },
    out: { type: 'string', default: join('bench', 'results', 'memory.json') },
  },
});
const medic = medicKb(values);
requireBenchFiles('bench:memory', [...medic.files, values['corpus-train'], values['corpus-dev']]);

const { indexDir } = ensureBenchIndex({ ...medic, modelDir: DEFAULT_MODEL_DIR, log: console.log });
const work = mkdtempSync(join(tmpdir(), 'cuilink-bench-memory-'));
const rerankerPresent = values.reranker !== 'none' && existsSync(join(values.reranker, 'manifest.json'));
try {
  // 1. Tuning on train: memory from `learn`, scored on `tune`.
  const learnRoot = join(work, 'learn');
  console.log(cli(['memory', 'add', '--memory', learnRoot, '--corpus', values['corpus-train'], '--split', 'learn', '--index', indexDir, '--outside-kb', '--provider', 'cpu']).trim());
  const tune = await loadPubTatorCorpus(values['corpus-train']);
  keepSplitPart(tune, 'tune', TUNING_SPLIT_SEED);
  const view = kbOntologyView(await loadIndexKb(indexDir));
  const defaults = parseLinkConfig({}).memory as unknown as Record<string, number>;
  const tuning = await tuneMemory({ indexDir, memoryDir: learnRoot, corpus: tune, view, rerankerDir: false, start: defaults, passes: values.tune ? 2 : 0, log: console.log });
  const chosen = tuning.best;
  const configFile = join(work, 'link-config.json');
  writeFileSync(configFile, JSON.stringify({ memory: chosen }));

  // 2. Tune-split scores of every setting (what the choice saw), then dev once with a memory from all of train.
  const trainRoot = join(work, 'train');
  const addOut = cli(['memory', 'add', '--memory', trainRoot, '--corpus', values['corpus-train'], '--index', indexDir, '--outside-kb', '--provider', 'cpu']).trim();
  console.log(addOut);
  const settings = [
    { name: 'bi-encoder, no memory', reranker: 'none', memory: null as string | null },
    { name: 'bi-encoder + memory', reranker: 'none', memory: 'x' },
    ...(rerankerPresent ? [{ name: 'bi-encoder + reranker (default), no memory', reranker: values.reranker, memory: null }, { name: 'bi-encoder + reranker (default) + memory', reranker: values.reranker, memory: 'x' }] : []),
  ];
  const evalRun = (corpus: string, memoryRoot: string | null, reranker: string, split: string | null) => {
    const out = join(work, `eval-${Math.random().toString(36).slice(2)}.json`);
    const args = ['eval', '--index', indexDir, '--corpus', corpus, '--reranker', reranker, '--provider', 'cpu', '--link-config', configFile, '--out', out];
    if (memoryRoot) args.push('--memory', memoryRoot);
    if (split) args.push('--split', split);
    cli(args);
    const report = JSON.parse(readFileSync(out, 'utf8')) as { metrics: { overall: { acc1: number; acc5: number; mrr: number } }; mentionsPerSecond?: number; versions: Record<string, unknown> };
    return report;
  };
  const rows = [];
  for (const s of settings) {
    const onTune = evalRun(values['corpus-train'], s.memory && learnRoot, s.reranker, 'tune');
    const onDev = evalRun(values['corpus-dev'], s.memory && trainRoot, s.reranker, null);
    rows.push({ setting: s.name, tune: onTune.metrics.overall, dev: onDev.metrics.overall, devMentionsPerSecond: onDev.mentionsPerSecond ?? null, memoryVersion: onDev.versions['memoryVersion'] ?? null });
    console.log(`${s.name.padEnd(48)} tune acc@1 ${onTune.metrics.overall.acc1.toFixed(3)}  dev acc@1 ${onDev.metrics.overall.acc1.toFixed(3)} acc@5 ${onDev.metrics.overall.acc5.toFixed(3)} MRR ${onDev.metrics.overall.mrr.toFixed(3)}`);
  }
  const pairs = [];
  for (let i = 0; i + 1 < rows.length; i += 2) pairs.push({ without: rows[i]!, with: rows[i + 1]! });
  const worse = pairs.filter((p) => p.with.dev.acc1 < p.without.dev.acc1 || p.with.tune.acc1 < p.without.tune.acc1);
  const best = Math.max(...rows.filter((r) => r.memoryVersion !== null).map((r) => r.dev.acc1));
  const bar = { devAcc1WithMemoryAtLeast: 0.9, met: best >= 0.9 && worse.length === 0, settingsWhereMemoryIsWorse: worse.map((p) => p.with.setting) };
  console.log(`\nbar: dev acc@1 ≥ 0.90 with memory and never worse than without: ${bar.met ? 'PASS' : 'FAIL'}`);
  mkdirSync(join(values.out, '..'), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify({
    benchmark: 'bench:memory', date: new Date().toISOString(), machine: { cpus: cpus().length, model: cpus()[0]?.model },
    kb: values.kb, kbSupplements: medic.supplements, kbXrefNames: medic.xrefNames, train: values['corpus-train'], dev: values['corpus-dev'], index: indexDir, reranker: rerankerPresent ? portablePaths(values.reranker) : null,
    settingsChosenOn: 'NCBI-disease train tuning split (src/eval/tuning-split.ts, seed 20261123): memory from the learn part, scored on the 100 tune documents, reranker off; dev reported once with the memory from all of train',
    memoryParams: chosen, memoryParamsAreDefaults: JSON.stringify(chosen) === JSON.stringify(defaults), tuning: { acc1: tuning.acc1, steps: tuning.steps, searched: values.tune },
    memoryAdd: portablePaths(addOut, work), rows, bar,
  }, null, 2)}\n`);
  console.log(`wrote ${values.out}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
