import type { LinkingCore } from '../link/types.ts';
import type { MetricsReport } from './metrics/metrics-accumulator.ts';
import type { OfflineEvalResult } from './offline-eval.ts';
import type { PubTatorStats } from './pubtator.ts';

/** The JSON `cuilink eval --out` writes. */
export interface EvalReport {
  corpus: string;
  index: string;
  /** The --types filter, when given. */
  types: string | null;
  versions: LinkingCore['versions'];
  counts: PubTatorStats & { notes: number; mentions: number; missingPredictions: number };
  linkSeconds: number;
  mentionsPerSecond: number;
  metrics: MetricsReport;
  createdAt: string;
}

export function buildEvalReport(args: { corpus: string; index: string; types: string | null; versions: LinkingCore['versions']; stats: PubTatorStats; result: OfflineEvalResult }): EvalReport {
  const { result } = args;
  return {
    corpus: args.corpus,
    index: args.index,
    types: args.types,
    versions: args.versions,
    counts: { ...args.stats, notes: result.notes, mentions: result.mentions, missingPredictions: result.missingPredictions },
    linkSeconds: result.linkSeconds,
    mentionsPerSecond: result.mentionsPerSecond,
    metrics: result.metrics,
    createdAt: new Date().toISOString(),
  };
}
