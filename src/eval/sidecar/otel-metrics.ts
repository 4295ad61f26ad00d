import { metrics, type Meter } from '@opentelemetry/api';
import type { MetricsReport } from '../metrics/metrics-accumulator.ts';
import type { SidecarReport } from './sidecar-evaluator.ts';
import { WINDOW_METRICS } from './prometheus-text.ts';

/**
 * Publishes the evaluator's numbers as OpenTelemetry observable instruments on the global meter
 * (whatever SDK and exporter the process set up reads them); the same names and attributes as
 * the Prometheus text, with dots. Values are read from the latest report at collection time.
 */
export function registerEvaluatorInstruments(latest: () => SidecarReport, meter: Meter = metrics.getMeter('cuilink.eval')): void {
  const gauges = WINDOW_METRICS.map((m) => ({ metric: m, gauge: meter.createObservableGauge(`cuilink.eval.${m.name}`, { description: m.help }) }));
  const joins = meter.createObservableCounter('cuilink.eval.join', { description: 'Join outcomes: joined pairs and half-pairs expired, evicted or replaced' });
  const pending = meter.createObservableGauge('cuilink.eval.pending', { description: 'Half-pairs waiting for their other half' });
  const alert = meter.createObservableGauge('cuilink.eval.alert', { description: '1 while an acc@1 alert fires' });
  meter.addBatchObservableCallback(
    (observer) => {
      const report = latest();
      for (const [window, windowReport] of [['count', report.windows.count], ['time', report.windows.time]] as const) {
        for (const [by, group, summary] of groups(windowReport)) {
          for (const { metric, gauge } of gauges) {
            const value = metric.value(summary);
            if (value !== null) observer.observe(gauge, value, { window, by, group });
          }
        }
      }
      const j = report.join;
      observer.observe(joins, j.joined, { outcome: 'joined' });
      observer.observe(joins, j.goldExpired, { outcome: 'gold_expired' });
      observer.observe(joins, j.predictionsExpired, { outcome: 'predictions_expired' });
      observer.observe(joins, j.goldEvicted, { outcome: 'gold_evicted' });
      observer.observe(joins, j.predictionsEvicted, { outcome: 'predictions_evicted' });
      observer.observe(pending, j.pendingGold, { side: 'gold' });
      observer.observe(pending, j.pendingPredictions, { side: 'prediction' });
      for (const a of report.alerts) observer.observe(alert, a.firing ? 1 : 0, { rule: a.rule, window: a.window });
    },
    [...gauges.map((g) => g.gauge), joins, pending, alert],
  );
}

function groups(report: MetricsReport): [string, string, MetricsReport['overall']][] {
  return [
    ['overall', 'all', report.overall],
    ...Object.entries(report.byLabel).map(([g, s]): [string, string, MetricsReport['overall']] => ['ner_label', g, s]),
    ...Object.entries(report.bySemanticType).map(([g, s]): [string, string, MetricsReport['overall']] => ['semantic_type', g, s]),
  ];
}
