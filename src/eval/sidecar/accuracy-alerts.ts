import type { MetricSummary } from '../metrics/metric-sums.ts';
import { CALIBRATION_MIN_LINKS, formatPValue } from '../metrics/calibration-test.ts';

export interface AlertRules {
  /** Fire when the window's acc@1 is below this. */
  floor?: number;
  /** Expected acc@1 (e.g. the offline `cuilink eval` figure). */
  baseline?: number;
  /** Fire when acc@1 is more than this below the baseline. */
  margin?: number;
  /**
   * Fire when the window's analytic calibration test (MetricSummary.calibrationP) is below this:
   * the confidence no longer matches acc@1 by more than sampling noise. Absent: no such rule.
   */
  calibrationAlpha?: number;
  /**
   * Judge a window only while it holds this many samples (a few mentions say nothing); for the
   * calibration rule, samples with a calibrated confidence, and never fewer than
   * CALIBRATION_MIN_LINKS. Below it, an alert keeps its state: a
   * time window emptied by a quiet stream is no sign of recovery.
   */
  minSamples: number;
}

export type AlertRule = 'floor' | 'baseline' | 'calibration';

export interface AlertState {
  rule: AlertRule;
  window: string;
  firing: boolean;
  acc1: number | null;
  /** Rule `calibration`: the p-value judged (null while there is none); absent for the acc@1 rules. */
  calibrationP?: number | null;
  /** acc@1 for the acc@1 rules, alpha for `calibration`. */
  threshold: number;
  /** Epoch ms of the last change (firing or resolved). */
  since: number;
}

/** Mentions in the reliability bins: those the calibration test reads. */
function binned(summary: MetricSummary): number {
  return summary.reliability.reduce((total, bin) => total + bin.n, 0);
}

/**
 * Alerts per window: acc@1 below a floor, or more than a margin below a baseline; the calibration
 * test's p below alpha. Transitions (firing ↔ resolved) are returned so the caller logs one line
 * per change, not one per sample; current states feed the `cuilink_eval_alert` gauge. A window
 * with fewer than `minSamples` is not judged, so running out of data never resolves (or fires) an
 * alert.
 */
export class AccuracyAlerts {
  private readonly rules: AlertRules;
  private readonly states = new Map<string, AlertState>();

  constructor(rules: AlertRules) {
    this.rules = rules;
  }

  /** Re-judges one window; returns the states that changed. */
  update(window: string, summary: MetricSummary, now: number): AlertState[] {
    const changed: AlertState[] = [];
    const judge = (rule: AlertRule, threshold: number, value: number | null, samples: number, needed: number, fields: Partial<AlertState>): void => {
      const key = `${rule}:${window}`;
      const previous = this.states.get(key);
      if (samples < needed || value === null) {
        // Too little data to judge: an alert that fired stays firing (with the value it fired on) until enough samples say otherwise.
        if (!previous) this.states.set(key, { rule, window, firing: false, acc1: summary.acc1, ...fields, threshold, since: now });
        return;
      }
      const firing = value < threshold;
      const state: AlertState = { rule, window, firing, acc1: summary.acc1, ...fields, threshold, since: previous && previous.firing === firing ? previous.since : now };
      this.states.set(key, state);
      if ((previous?.firing ?? false) !== firing) changed.push(state);
    };
    if (this.rules.floor !== undefined) judge('floor', this.rules.floor, summary.acc1, summary.n, this.rules.minSamples, {});
    // Rounded so that 0.8 − 0.1 is 0.7, not 0.7000000000000001 (acc@1 exactly 0.7 does not fire).
    if (this.rules.baseline !== undefined) judge('baseline', Math.round((this.rules.baseline - (this.rules.margin ?? 0)) * 1e9) / 1e9, summary.acc1, summary.n, this.rules.minSamples, {});
    // Below CALIBRATION_MIN_LINKS the χ² law does not hold (a window of a dozen notes): such a window is not judged.
    if (this.rules.calibrationAlpha !== undefined) judge('calibration', this.rules.calibrationAlpha, summary.calibrationP, binned(summary), Math.max(this.rules.minSamples, CALIBRATION_MIN_LINKS), { calibrationP: summary.calibrationP });
    return changed;
  }

  current(): AlertState[] {
    return [...this.states.values()];
  }
}

/** The log line of a transition. */
export function alertLogLine(state: AlertState): string {
  if (state.rule === 'calibration') {
    const p = state.calibrationP === undefined || state.calibrationP === null ? 'n/a' : formatPValue(state.calibrationP);
    return state.firing
      ? `ALERT firing: calibration test p ${p} in the ${state.window} window is below --calibration-alpha (${state.threshold}): confidence and acc@1 differ by more than noise`
      : `ALERT resolved: calibration test p ${p} in the ${state.window} window is back at or above --calibration-alpha (${state.threshold})`;
  }
  const acc = state.acc1 === null ? 'n/a' : state.acc1.toFixed(3);
  const what = state.rule === 'floor' ? 'the floor' : 'baseline − margin';
  return state.firing
    ? `ALERT firing: acc@1 ${acc} in the ${state.window} window is below ${what} (${state.threshold.toFixed(3)})`
    : `ALERT resolved: acc@1 ${acc} in the ${state.window} window is back at or above ${what} (${state.threshold.toFixed(3)})`;
}
