// Issue 26: the context cross-encoder's cost per pair is its length. How much window (characters a
// side) and how many tokens per pair (maxLength) it needs, under rerank.repeatWindow 'first' (the
// default), chosen on the tune split of NCBI-disease train only (dev streamed for speed, not scored).
//
// Rule, written before the first run: the shipped manifest (50 characters a side, maxLength 64) stays
// unless a variant with a smaller maxLength, or the same maxLength and a smaller window, reads tune
// acc@1 no lower than the shipped one's minus 2 mentions (of 917); among those the smallest
// maxLength wins, then the smallest window. Then the link cache's first pass over train + dev
// (bench/first-pass.ts), one round back to back: the default linker, the shipped window, the
// chosen one; issue 26's bar is ≥ 70% of the default's rate. No calibration in any row.
//   node --import tsx bench/context-window-size.ts [--first-pass] [--out FILE] [--index DIR]
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
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
    out: { type: 'string', default: join('bench', 'results', 'context-window-size.json') },
  },
});
const medic = medicKb(values);
requireBenchFiles('context-window-size', [...medic.files, values.train]);
const { indexDir } = ensureBenchIndex({ ...medic, modelDir: DEFAULT_MODEL_DIR, indexDir: values.index, rebuild: false, provider: 'cpu', log: console.log });
const view = kbOntologyView(await loadIndexKb(indexDir));
const tune: GoldCorpus = await loadPubTatorCorpus(values.train);
keepSplitPart(tune, 'tune', TUNING_SPLIT_SEED);
const roots: string[] = [];

/** The same model files under a manifest with another window and maxLength. */
function variantDir(contextChars: number, maxLength: number): string {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-window-'));
  roots.push(root);
  const manifest = JSON.parse(readFileSync(join(values.context, 'manifest.json'), 'utf8')) as { id: string; tokenizer: string; files: Record<string, string>; query: Record<string, unknown> };
  for (const file of new Set([manifest.tokenizer, ...Object.values(manifest.files)])) symlinkSync(resolve(values.context, file), join(root, file));
  writeFileSync(join(root, 'manifest.json'), JSON.stringify({ ...manifest, id: `${manifest.id}-window-${contextChars}-${maxLength}`, maxLength, query: { ...manifest.query, contextChars } }));
  return root;
}

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
  const dir = variantDir(contextChars, maxLength);
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
  const vs = (r: Row) => {
    const c = approximateRandomization(pairPredictions(shipped.result.scored, r.result.scored), { shuffles: 10000, seed: 1 });
    const acc1 = c.metrics.find((m) => m.metric === 'acc1')!;
    return { acc1Difference: acc1.difference, pValue: acc1.pValue };
  };
  console.log(`chosen: ${chosen.contextChars} characters a side, maxLength ${chosen.maxLength}`);
  const firstPass = values['first-pass']
    ? await runFirstPass({
        open: { indexDir, provider: 'cpu', calibration: false },
        train: await loadPubTatorCorpus(values.train),
        dev: await loadPubTatorCorpus(values.dev),
        view,
        rounds: 1,
        settings: [
          { name: 'default', config: {} },
          { name: 'context cross-encoder, shipped window (50 a side, maxLength 64)', config: {}, rerankerDir: shipped.dir },
          ...(chosen === shipped ? [] : [{ name: `context cross-encoder, ${chosen.contextChars} a side, maxLength ${chosen.maxLength}`, config: {}, rerankerDir: chosen.dir }]),
        ],
      })
    : null;
  const out = {
    benchmark: 'bench/context-window-size.ts',
    chosenOn: 'tune split of NCBI-disease train (seed 20261123), rerank.repeatWindow first; dev streamed for speed only, not scored',
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model },
    rule: 'the shipped 50 / 64 unless a variant with a smaller maxLength (or the same and a smaller window) is within 2 tune mentions of its acc@1; then smallest maxLength, then smallest window',
    chosen: { contextChars: chosen.contextChars, maxLength: chosen.maxLength },
    firstPass: firstPass && {
      note: 'NCBI-disease train + dev as one stream, cold cache, one round, settings back to back on a shared 2-core machine: compare ratios only',
      ratiosToDefault: firstPass.results.slice(1).map((r) => ({ name: r.name, ratio: r.medianMentionsPerSecond / firstPass.results[0]!.medianMentionsPerSecond })),
      results: firstPass.results.map((r) => ({ name: r.name, mentionsPerSecond: r.medianMentionsPerSecond, worstCaseMentionsPerSecond: r.medianWorstCaseMentionsPerSecond, hitRatio: r.hitRatio })),
    },
    rows: rows.map((r) => ({ contextChars: r.contextChars, maxLength: r.maxLength, acc1: r.acc1, acc5: r.acc5, mrr: r.mrr, vsShipped: r === shipped ? null : vs(r) })),
  };
  mkdirSync(join(values.out, '..'), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify(out, null, 2)}\n`);
  console.log(`wrote ${values.out}`);
} finally {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
}
