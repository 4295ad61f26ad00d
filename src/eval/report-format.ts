import type { MetricsReport } from './metrics/metrics-accumulator.ts';
import type { MetricSummary } from './metrics/metric-sums.ts';

const COLUMNS: { head: string; value: (s: MetricSummary) => number | null }[] = [
  { head: 'acc@1', value: (s) => s.acc1 },
  { head: 'acc@5', value: (s) => s.acc5 },
  { head: 'MRR', value: (s) => s.mrr },
  { head: 'NIL%', value: (s) => s.nilRate },
  { head: 'NIL-P', value: (s) => s.nilPrecision },
  { head: 'NIL-R', value: (s) => s.nilRecall },
  { head: 'sim', value: (s) => s.similarity },
  { head: 'nDCG@5', value: (s) => s.ndcg5 },
  { head: 'ECE', value: (s) => s.ece },
];

function cell(value: number | null): string {
  return value === null ? '—' : value.toFixed(3);
}

/** Fixed-width table: one row overall, then one per group of the chosen breakdown. */
export function formatMetricsTable(report: MetricsReport, breakdown: 'byLabel' | 'bySemanticType' = 'byLabel'): string {
  const rows: [string, MetricSummary][] = [['overall', report.overall], ...Object.entries(report[breakdown])];
  const width = Math.max(12, ...rows.map(([name]) => name.length));
  const header = `${'group'.padEnd(width)}  ${'n'.padStart(6)}  ${COLUMNS.map((c) => c.head.padStart(6)).join('  ')}`;
  const lines = rows.map(([name, s]) => `${name.padEnd(width)}  ${String(s.n).padStart(6)}  ${COLUMNS.map((c) => cell(c.value(s)).padStart(6)).join('  ')}`);
  return [header, ...lines].join('\n');
}
