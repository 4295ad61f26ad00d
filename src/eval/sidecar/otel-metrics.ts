import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Meter } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider, type IMetricReader } from '@opentelemetry/sdk-metrics';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { MetricsReport } from '../metrics/metrics-accumulator.ts';
import { emptySums, summarize, type MetricSummary } from '../metrics/metric-sums.ts';
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
  { name: 'ece', help: 'Expected calibration error of the calibrated confidence against acc@1, over the samples whose link has one (none: no value)', value: (s) => s.ece },
  { name: 'calibration_p', help: 'p-value of the analytic grouped calibration test (chi-square over the reliability bins): small when confidence and acc@1 differ by more than noise (no calibrated sample: no value)', value: (s) => s.calibrationP },
];

/** Join outcomes, in the order the counter reports them: the attribute value and the report field. */
export const JOIN_OUTCOMES: [string, keyof SidecarReport['join']][] = [
  ['joined', 'joined'],
  ['gold_expired', 'goldExpired'],
  ['predictions_expired', 'predictionsExpired'],
  ['gold_evicted', 'goldEvicted'],
  ['predictions_evicted', 'predictionsEvicted'],
  ['gold_replaced', 'goldReplaced'],
  ['predictions_replaced', 'predictionsReplaced'],
  ['candidates_cut', 'candidatesCut'],
];

interface VersionGroup {
  n: number;
  acc1: number | null;
  sequence?: number;
}

/** Per memory-version group, the gauges `cuilink.eval.memory_version.*` and what each reads. */
export const MEMORY_VERSION_METRICS: { name: string; help: string; value: (g: VersionGroup) => number | null }[] = [
  { name: 'samples', help: 'Scored (measure-stream) samples linked with the memory version at this rank (0 the newest; none: no memory; older: versions folded together)', value: (g) => g.n },
  { name: 'acc1', help: 'acc@1 of the scored samples linked with the memory version at this rank', value: (g) => g.acc1 },
  { name: 'sequence', help: 'Sequence number of the memory version at this rank (000007-… → 7; its full name is on /report)', value: (g) => g.sequence ?? null },
];

/**
 * The groups by rank, newest version first: `0`, `1`, … up to the evaluator's limit, `none` and
 * `older`. A rank, not the version's name, is the attribute: the SDK keeps exporting every
 * attribute set an observable instrument once reported, so names would add a series per version
 * for the life of the process (the updater writes one every few seconds while labels arrive).
 */
function memoryVersionGroups(report: SidecarReport['byMemoryVersion']): [string, VersionGroup][] {
  const newestFirst = [...report.versions].reverse();
  return [...newestFirst.map((v, i): [string, VersionGroup] => [String(i), v]), ['none', report.noMemory], ['older', report.older]];
}

/** The window's groups, plus those it had before and lost (in `before`): they read as empty, 0 samples. */
function windowGroups(report: MetricsReport, before: Map<string, [string, string]>): [string, string, MetricSummary][] {
  const current = groups(report);
  for (const [by, group] of current) before.set(`${by}\u0000${group}`, [by, group]);
  const present = new Set(current.map(([by, group]) => `${by}\u0000${group}`));
  const empty = summarize(emptySums());
  return [...current, ...[...before].filter(([key]) => !present.has(key)).map(([, [by, group]]): [string, string, MetricSummary] => [by, group, empty])];
}

function groups(report: MetricsReport): [string, string, MetricSummary][] {
  return [
    ['overall', 'all', report.overall],
    ...Object.entries(report.byLabel).map(([g, s]): [string, string, MetricSummary] => ['ner_label', g, s]),
    ...Object.entries(report.bySemanticType).map(([g, s]): [string, string, MetricSummary] => ['semantic_type', g, s]),
  ];
}

/**
 * The evaluator's numbers as OpenTelemetry observable instruments `cuilink.eval.*`, read from the
 * latest report at collection time. The one definition of what is exported: /metrics is these
 * instruments through the Prometheus exporter (dots become underscores, counters get `_total`).
 */
export function registerEvaluatorInstruments(latest: () => SidecarReport, meter: Meter): void {
  const gauges = WINDOW_METRICS.map((m) => ({ metric: m, gauge: meter.createObservableGauge(`cuilink.eval.${m.name}`, { description: m.help }) }));
  const windowLimit = meter.createObservableGauge('cuilink.eval.window_limit', { description: 'Window size: samples for the count window, seconds for the time window' });
  const joins = meter.createObservableCounter('cuilink.eval.join', { description: 'Join outcomes: joined pairs (scored), pairs left unscored because the stage cut their candidate list, and half-pairs expired (TTL), evicted (max size) or replaced' });
  const pending = meter.createObservableGauge('cuilink.eval.pending', { description: 'Half-pairs waiting for their other half' });
  const alert = meter.createObservableGauge('cuilink.eval.alert', { description: '1 while an alert fires (rule floor or baseline: acc@1; calibration: the calibration test), 0 otherwise' });
  const notesSeen = meter.createObservableCounter('cuilink.eval.notes_seen', { description: 'Linked notes consumed' });
  const goldSeen = meter.createObservableCounter('cuilink.eval.gold_seen', { description: 'Gold mentions consumed' });
  const samplesScored = meter.createObservableCounter('cuilink.eval.samples_scored', { description: 'Joined samples scored' });
  const goldByStream = meter.createObservableCounter('cuilink.eval.gold_by_stream', { description: 'Gold labels by the stream of their note: learn (the memory learns them, not scored) or measure (scored)' });
  const learnDropped = meter.createObservableCounter('cuilink.eval.learn_predictions_dropped', { description: 'Predictions of learn-stream notes, dropped on arrival (their gold is never scored)' });
  const versionGauges = MEMORY_VERSION_METRICS.map((m) => ({ metric: m, gauge: meter.createObservableGauge(`cuilink.eval.memory_version.${m.name}`, { description: m.help }) }));
  // The SDK's cumulative storage (the only temporality the Prometheus exporter takes) keeps
  // exporting the last value of an attribute set no longer observed: an emptied window would go on
  // showing its old accuracy. So a group that left a window stays, as empty, and a series that had
  // a value and has none now reads NaN; one that never had a value is still left out.
  const groupsSeen = { count: new Map<string, [string, string]>(), time: new Map<string, [string, string]>() };
  const hadValue = new Set<string>();
  meter.addBatchObservableCallback(
    (observer) => {
      const report = latest();
      for (const [window, windowReport] of [['count', report.windows.count], ['time', report.windows.time]] as const) {
        for (const [by, group, summary] of windowGroups(windowReport, groupsSeen[window])) {
          for (const { metric, gauge } of gauges) {
            const value = metric.value(summary);
            const key = `${metric.name}\u0000${window}\u0000${by}\u0000${group}`;
            if (value !== null) hadValue.add(key);
            if (hadValue.has(key)) observer.observe(gauge, value ?? Number.NaN, { window, by, group });
          }
        }
      }
      observer.observe(windowLimit, report.windows.count.limit, { window: 'count' });
      observer.observe(windowLimit, report.windows.time.limitMs / 1000, { window: 'time' });
      const j = report.join;
      for (const [outcome, field] of JOIN_OUTCOMES) observer.observe(joins, j[field], { outcome });
      observer.observe(pending, j.pendingGold, { side: 'gold' });
      observer.observe(pending, j.pendingPredictions, { side: 'prediction' });
      for (const a of report.alerts) observer.observe(alert, a.firing ? 1 : 0, { rule: a.rule, window: a.window });
      observer.observe(notesSeen, report.notesSeen);
      observer.observe(goldSeen, report.goldSeen);
      observer.observe(samplesScored, report.samplesScored);
      observer.observe(goldByStream, report.goldByStream.learn, { stream: 'learn' });
      observer.observe(goldByStream, report.goldByStream.measure, { stream: 'measure' });
      observer.observe(learnDropped, report.learnPredictionsDropped);
      // Ranks never leave and a rank's acc@1, once set, never returns to null: nothing goes stale here.
      for (const [rank, group] of memoryVersionGroups(report.byMemoryVersion)) {
        for (const { metric, gauge } of versionGauges) {
          const value = metric.value(group);
          if (value !== null) observer.observe(gauge, value, { version_rank: rank });
        }
      }
    },
    [...gauges.map((g) => g.gauge), windowLimit, joins, pending, alert, notesSeen, goldSeen, samplesScored, goldByStream, learnDropped, ...versionGauges.map((g) => g.gauge)],
  );
}

/**
 * The evaluator's own meter provider: its instruments, read by the Prometheus exporter (served at
 * /metrics by the report server) and by any extra reader given (an OTLP exporter, say).
 */
export class EvaluatorMetrics {
  private readonly exporter: PrometheusExporter;
  private readonly provider: MeterProvider;

  constructor(latest: () => SidecarReport, options: { readers?: IMetricReader[]; serviceName?: string } = {}) {
    // No otel_scope_* labels: the series keep the names and labels dashboards and alert rules use.
    this.exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
    this.provider = new MeterProvider({ resource: resourceFromAttributes({ 'service.name': options.serviceName ?? 'cuilink-evaluator' }), readers: [this.exporter, ...(options.readers ?? [])] });
    registerEvaluatorInstruments(latest, this.provider.getMeter('cuilink.eval'));
  }

  /** Serves the Prometheus text exposition (GET /metrics). */
  handle(req: IncomingMessage, res: ServerResponse): void {
    this.exporter.getMetricsRequestHandler(req, res);
  }

  /** The same text, for tests and tools that do not go through HTTP. */
  async text(): Promise<string> {
    const { resourceMetrics } = await this.exporter.collect();
    return new PrometheusSerializer(undefined, false, undefined, false, true).serialize(resourceMetrics);
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}
