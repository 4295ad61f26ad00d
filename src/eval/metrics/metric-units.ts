/**
 * Real-valued per-mention scores are added as integers in units of 1e-9. Integer sums are exact
 * and order-free, so a rolling window that adds and removes mentions in any order ends on exactly
 * the sums (hence exactly the numbers) of a batch over the same mentions. Sums stay exact up to
 * 2^53 units: about nine million mentions per group, far beyond any window or corpus here.
 */
export const UNIT = 1e9;

export function toUnits(value: number): number {
  return Math.round(value * UNIT);
}

export const DEFAULT_CALIBRATION_BINS = 10;

/** Reliability bin of a confidence in units; 1.0 falls in the last bin. */
export function binOf(confidenceUnits: number, bins: number): number {
  return Math.min(bins - 1, Math.floor((confidenceUnits * bins) / UNIT));
}
