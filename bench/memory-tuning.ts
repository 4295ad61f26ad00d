// Chooses the memory's link-config weights on the fixed tuning split of NCBI-disease train: the
// memory learns from the `learn` part, every setting is scored on the `tune` part (never on dev).
// A coordinate search from the schema defaults, one parameter at a time, two passes; ties keep
// the earlier (simpler) value.
import { performance } from 'node:perf_hooks';
import type { GoldCorpus } from '../src/eval/gold.ts';
import { evaluateCorpus } from '../src/eval/offline-eval.ts';
import type { OntologyView } from '../src/eval/metrics/ontology-view.ts';
import { openLinker } from '../src/link/open-linker.ts';

export type MemoryParams = Record<string, number>;

export const MEMORY_GRID: Record<string, number[]> = {
  kbVotes: [0, 0.5, 1, 2, 4],
  minSupport: [1, 2, 3],
  majority: [0.5, 0.6, 0.75],
  denseThreshold: [0.8, 0.85, 0.9, 0.95],
  denseWeight: [0, 0.25, 0.5, 1],
  bonus: [0, 0.02, 0.05, 0.2],
  prior: [0, 0.001, 0.01],
};

export interface TuningStep { params: MemoryParams; acc1: number }

export async function tuneMemory(options: { indexDir: string; memoryDir: string; corpus: GoldCorpus; view: OntologyView; rerankerDir: string | false; start: MemoryParams; passes?: number; log: (line: string) => void }): Promise<{ best: MemoryParams; acc1: number; steps: TuningStep[] }> {
  const cache = new Map<string, number>();
  const steps: TuningStep[] = [];
  const score = async (params: MemoryParams): Promise<number> => {
    const key = JSON.stringify(params);
    const known = cache.get(key);
    if (known !== undefined) return known;
    const started = performance.now();
    const core = await openLinker({ indexDir: options.indexDir, rerankerDir: options.rerankerDir, provider: 'cpu', memoryDir: options.memoryDir, memoryPollMs: 0, config: { memory: params } });
    let acc1: number;
    try {
      acc1 = (await evaluateCorpus(core, options.corpus, options.view, { batchSize: 32 })).metrics.overall.acc1 ?? 0;
    } finally {
      await core.close();
    }
    cache.set(key, acc1);
    steps.push({ params, acc1 });
    options.log(`  tune ${key}: acc@1 ${acc1.toFixed(4)} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    return acc1;
  };
  let best = { ...options.start };
  let bestAcc = await score(best);
  for (let pass = 0; pass < (options.passes ?? 2); pass++) {
    let moved = false;
    for (const [name, values] of Object.entries(MEMORY_GRID)) {
      for (const value of values) {
        if (value === best[name]) continue;
        const candidate = { ...best, [name]: value };
        const acc = await score(candidate);
        if (acc > bestAcc + 1e-9) {
          best = candidate;
          bestAcc = acc;
          moved = true;
        }
      }
    }
    if (!moved) break;
  }
  return { best, acc1: bestAcc, steps };
}
