import type { MetricsReport } from '../metrics/metrics-accumulator.ts';
import type { MetricSummary } from '../metrics/metric-sums.ts';
import type { SidecarReport } from './sidecar-evaluator.ts';

/** Window metrics exported per (window, breakdown, group); the field of MetricSummary each reads. */
export const WINDOW_METRICS: { name: string; help: string; value: (s: MetricSummary) => number | null }[] = [
  { name: 'samples', help: 'Joined gold samples in the window', value: (s) => s.n },
  { name: 'acc1', help: 'acc@1: share of samples whose gold is the first predicted concept', value: (s) => s.acc1 },
  { name: 'acc5', help: 'acc@5: share whose gold is among the first 5 distinct predicted concepts', value: (s) => s.acc5 },
  { name: 'mrr', help: 'Mean reciprocal rank of the gold among the predicted concepts', value: (s) => s.mrr },
  { name: 'nil_rate', help: 'Share of samples the linker called NIL', value: (s) => s.nilRate },
  { name: 'nil_precision', help: 'Of samples called NIL, the share whose gold is not in the KB', value: (s) => s.nilPrecision },
  { name: 'nil_recall', help: 'Of samples whose gold is not in the KB, the share called NIL', value: (s) => s.nilRecall },
  { name: 'similarity', help: 'Mean ontology similarity 1/(1+d) of the top prediction to the gold', value: (s) => s.similarity },
  { name: 'ndcg5', help: 'Mean graded nDCG@5 (3 exact, 2 parent/child, 1 grandparent/grandchild/sibling)', value: (s) => s.ndcg5 },
  { name: 'ece', help: 'Expected calibration error of the top score against acc@1', value: (s) => s.ece },
];

function escape(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labels(pairs: Record<string, string>): string {
  return `{${Object.entries(pairs).map(([k, v]) => `${k}="${escape(v)}"`).join(',')}}`;
}

function groupsOf(report: MetricsReport): [string, string, MetricSummary][] {
  return [
    ['overall', 'all', report.overall],
    ...Object.entries(report.byLabel).map(([g, s]): [string, string, MetricSummary] => ['ner_label', g, s]),
    ...Object.entries(report.bySemanticType).map(([g, s]): [string, string, MetricSummary] => ['semantic_type', g, s]),
  ];
}

/** Prometheus text exposition (format 0.0.4) of a sidecar report, served at /metrics. */
export function renderPrometheus(report: SidecarReport): string {
  const out: string[] = [];
  const family = (name: string, type: 'gauge' | 'counter', help: string): void => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  };
  for (const metric of WINDOW_METRICS) {
    const name = `cuilink_eval_${metric.name}`;
    family(name, 'gauge', metric.help);
    for (const [window, windowReport] of [['count', report.windows.count], ['time', report.windows.time]] as const) {
      for (const [by, group, summary] of groupsOf(windowReport)) {
        const value = metric.value(summary);
        if (value !== null) out.push(`${name}${labels({ window, by, group })} ${value}`);
      }
    }
  }
  family('cuilink_eval_window_limit', 'gauge', 'Window size: samples for the count window, seconds for the time window');
  out.push(`cuilink_eval_window_limit${labels({ window: 'count' })} ${report.windows.count.limit}`);
  out.push(`cuilink_eval_window_limit${labels({ window: 'time' })} ${report.windows.time.limitMs / 1000}`);
  family('cuilink_eval_join_total', 'counter', 'Join outcomes: joined pairs, and half-pairs expired (TTL), evicted (max size) or replaced');
  const j = report.join;
  const outcomes: [string, number][] = [
    ['joined', j.joined], ['gold_expired', j.goldExpired], ['predictions_expired', j.predictionsExpired], ['gold_evicted', j.goldEvicted],
    ['predictions_evicted', j.predictionsEvicted], ['gold_replaced', j.goldReplaced], ['predictions_replaced', j.predictionsReplaced],
  ];
  for (const [outcome, value] of outcomes) out.push(`cuilink_eval_join_total${labels({ outcome })} ${value}`);
  family('cuilink_eval_pending', 'gauge', 'Half-pairs waiting for their other half');
  out.push(`cuilink_eval_pending${labels({ side: 'gold' })} ${j.pendingGold}`, `cuilink_eval_pending${labels({ side: 'prediction' })} ${j.pendingPredictions}`);
  family('cuilink_eval_alert', 'gauge', '1 while an acc@1 alert fires (rule floor or baseline), 0 otherwise');
  for (const a of report.alerts) out.push(`cuilink_eval_alert${labels({ rule: a.rule, window: a.window })} ${a.firing ? 1 : 0}`);
  family('cuilink_eval_notes_seen_total', 'counter', 'Linked notes consumed');
  out.push(`cuilink_eval_notes_seen_total ${report.notesSeen}`);
  family('cuilink_eval_gold_seen_total', 'counter', 'Gold mentions consumed');
  out.push(`cuilink_eval_gold_seen_total ${report.goldSeen}`);
  family('cuilink_eval_samples_scored_total', 'counter', 'Joined samples scored');
  out.push(`cuilink_eval_samples_scored_total ${report.samplesScored}`);
  return `${out.join('\n')}\n`;
}
