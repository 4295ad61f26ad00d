import type { ConfidenceSummary } from './selective-metrics.ts';

const f = (v: number | null, digits = 3) => (v === null ? '—' : v.toFixed(digits));

/** One line on how well confidence ranks and matches correctness (eval and calibrate print it). */
export function formatConfidence(s: ConfidenceSummary, label: string): string {
  return `confidence (${label}, ${s.n} links, acc@1 ${f(s.accuracy)}): AUROC ${f(s.auroc)}, precision at 80% coverage ${f(s.precisionAt80)}, at 90% ${f(s.precisionAt90)}, ECE ${f(s.ece)}`;
}
