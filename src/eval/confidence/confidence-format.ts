import { formatPValue } from '../metrics/calibration-test.ts';
import type { MetricSummary } from '../metrics/metric-sums.ts';
import type { ConfidenceSummary } from './selective-metrics.ts';

const f = (v: number | null, digits = 3) => (v === null ? '—' : v.toFixed(digits));

/** One line on how well confidence ranks and matches correctness (eval and calibrate print it). */
export function formatConfidence(s: ConfidenceSummary, label: string): string {
  const c = s.calibratedEce;
  // Beside the ECE, what a calibrated confidence would read on these links: the noise floor of a corpus this size.
  const floor = c ? ` (a calibrated confidence would read ${f(c.median)}, 95% of draws under ${f(c.p95)}; p ${c.pValue.toFixed(2)})` : '';
  return `confidence (${label}, ${s.n} links, acc@1 ${f(s.accuracy)}): AUROC ${f(s.auroc)}, precision at 80% coverage ${f(s.precisionAt80)}, at 90% ${f(s.precisionAt90)}, ECE ${f(s.ece)}${floor}`;
}

/**
 * The analytic calibration test of the metrics (calibration-test.ts: the one the evaluator
 * alerts on), printed under the bootstrap floor: both ask whether the ECE is more than noise.
 */
export function formatCalibrationTest(s: MetricSummary): string {
  const binned = s.reliability.reduce((total, bin) => total + bin.n, 0);
  if (s.calibrationP === null) return `calibration test (analytic, grouped; ${binned} links): none (no bin has variance)`;
  return `calibration test (analytic, grouped; ${binned} links): χ² ${s.calibrationChiSquare!.toFixed(2)} on ${s.calibrationDf} df, p ${formatPValue(s.calibrationP)}`;
}
