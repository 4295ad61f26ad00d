// What the context cross-encoder's tune-split benchmarks share (bench/context-rerank-tuning.ts,
// context-window-per-note.ts, context-window-size.ts): their flags, the bench index and the tune
// part of NCBI-disease train, and the model's files under a manifest with another window.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { loadPubTatorCorpus, type GoldCorpus } from '../src/eval/gold.ts';
import { kbOntologyView, loadIndexKb } from '../src/eval/kb-ontology-view.ts';
import type { OntologyView } from '../src/eval/metrics/ontology-view.ts';
import { keepSplitPart, type OfflineEvalResult } from '../src/eval/offline-eval.ts';
import { approximateRandomization, pairPredictions } from '../src/eval/randomization-test.ts';
import { TUNING_SPLIT_SEED } from '../src/eval/tuning-split.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { ensureBenchIndex } from './bench-index.ts';
import { runFirstPass, type FirstPassSetting } from './first-pass.ts';
import { MEDIC_KB_FLAGS, medicKb, requireBenchFiles } from './medic-kb.ts';

/** parseArgs options every context benchmark takes (each adds its own `out`). */
export const CONTEXT_BENCH_FLAGS = {
  ...MEDIC_KB_FLAGS,
  train: { type: 'string', default: join('..', 'shared', 'data', 'ncbi-disease', 'NCBItrainset_corpus.txt') },
  dev: { type: 'string', default: join('..', 'shared', 'data', 'ncbi-disease', 'NCBIdevelopset_corpus.txt') },
  index: { type: 'string' },
  'first-pass': { type: 'boolean', default: false },
} as const;

/** The bench index (built when missing), its ontology view and the tune part of the training corpus. */
export async function openTuneBench(values: { train: string; index?: string } & Parameters<typeof medicKb>[0], name: string): Promise<{ indexDir: string; view: OntologyView; tune: GoldCorpus }> {
  const medic = medicKb(values);
  requireBenchFiles(name, [...medic.files, values.train]);
  const { indexDir } = ensureBenchIndex({ ...medic, modelDir: DEFAULT_MODEL_DIR, indexDir: values.index, rebuild: false, provider: 'cpu', log: console.log });
  const view = kbOntologyView(await loadIndexKb(indexDir));
  const tune = await loadPubTatorCorpus(values.train);
  keepSplitPart(tune, 'tune', TUNING_SPLIT_SEED);
  return { indexDir, view, tune };
}

/** The same model files under a manifest with another context window (0: none) and maxLength. */
export function withWindow(dir: string, contextChars: number, maxLength: number): { dir: string; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-window-'));
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { id: string; tokenizer: string; files: Record<string, string>; query: Record<string, unknown> };
  for (const file of new Set([manifest.tokenizer, ...Object.values(manifest.files)])) symlinkSync(resolve(dir, file), join(root, file));
  writeFileSync(join(root, 'manifest.json'), JSON.stringify({ ...manifest, id: `${manifest.id}-window-${contextChars}-${maxLength}`, maxLength, query: { ...manifest.query, contextChars } }));
  return { dir: root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

/** acc@1 of `other` against `base` on the same mentions: the randomization test, and the mentions each side alone gets right. */
export function acc1Versus(base: OfflineEvalResult, other: OfflineEvalResult): { acc1Difference: number | null; pValue: number | null; mentionsGained: number; mentionsLost: number } {
  const c = approximateRandomization(pairPredictions(base.scored, other.scored), { shuffles: 10000, seed: 1 });
  const acc1 = c.metrics.find((m) => m.metric === 'acc1')!;
  const differ = other.scored.filter((s, i) => s.scores.hit1 !== base.scored[i]!.scores.hit1);
  return { acc1Difference: acc1.difference, pValue: acc1.pValue, mentionsGained: differ.filter((s) => s.scores.hit1).length, mentionsLost: differ.filter((s) => !s.scores.hit1).length };
}

/** One round of the link cache's first pass over train + dev (bench/first-pass.ts), no calibration, the default linker first. */
export async function contextFirstPass(values: { train: string; dev: string }, indexDir: string, view: OntologyView, settings: FirstPassSetting[]) {
  const result = await runFirstPass({ open: { indexDir, provider: 'cpu', calibration: false }, train: await loadPubTatorCorpus(values.train), dev: await loadPubTatorCorpus(values.dev), view, rounds: 1, settings: [{ name: 'default', config: {} }, ...settings] });
  return {
    note: 'NCBI-disease train + dev as one stream, cold cache, one round, settings back to back on a shared 2-core machine: compare ratios only',
    ratiosToDefault: result.results.slice(1).map((r) => ({ name: r.name, ratio: r.medianMentionsPerSecond / result.results[0]!.medianMentionsPerSecond })),
    results: result.results.map((r) => ({ name: r.name, mentionsPerSecond: r.medianMentionsPerSecond, worstCaseMentionsPerSecond: r.medianWorstCaseMentionsPerSecond, hitRatio: r.hitRatio })),
  };
}

export function writeResult(file: string, result: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`wrote ${file}`);
}
