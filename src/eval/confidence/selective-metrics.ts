/**
 * How well a confidence separates right links from wrong ones, for a job that keeps only the
 * links it trusts: AUROC (the chance that a random right link outranks a random wrong one),
 * precision at a coverage (keep the most confident share), and expected calibration error.
 * Pure functions of (confidence, right) pairs; `cuilink eval` and `cuilink calibrate` report them.
 */
export interface ConfidencePoint {
  confidence: number;
  correct: boolean;
}

/** Mann–Whitney AUROC with ties counted half; null when one class is empty. */
export function auroc(points: readonly ConfidencePoint[]): number | null {
  const sorted = [...points].sort((a, b) => a.confidence - b.confidence);
  const positives = sorted.filter((p) => p.correct).length;
  const negatives = sorted.length - positives;
  if (positives === 0 || negatives === 0) return null;
  let rankSum = 0;
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j < sorted.length && sorted[j]!.confidence === sorted[i]!.confidence) j++;
    const midRank = (i + 1 + j) / 2;
    for (let k = i; k < j; k++) if (sorted[k]!.correct) rankSum += midRank;
    i = j;
  }
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

/** Share right among the `coverage` most confident links (ties broken against the claim: wrong first). */
export function precisionAtCoverage(points: readonly ConfidencePoint[], coverage: number): number | null {
  const keep = Math.round(points.length * coverage);
  if (keep === 0) return null;
  const sorted = [...points].sort((a, b) => b.confidence - a.confidence || Number(a.correct) - Number(b.correct));
  return sorted.slice(0, keep).filter((p) => p.correct).length / keep;
}

export interface ReliabilityRow {
  lo: number;
  hi: number;
  n: number;
  confidence: number | null;
  accuracy: number | null;
}

/** Equal-width reliability bins over [0, 1] (1.0 falls in the last) and ECE = Σ (n_b/n)·|acc_b − conf_b|. */
export function reliability(points: readonly ConfidencePoint[], bins = 10): { rows: ReliabilityRow[]; ece: number | null } {
  const n = new Array<number>(bins).fill(0);
  const conf = new Array<number>(bins).fill(0);
  const hits = new Array<number>(bins).fill(0);
  for (const p of points) {
    const b = Math.min(bins - 1, Math.max(0, Math.floor(p.confidence * bins)));
    n[b]!++;
    conf[b]! += p.confidence;
    hits[b]! += Number(p.correct);
  }
  let gap = 0;
  const rows = n.map((count, b) => {
    gap += Math.abs(hits[b]! - conf[b]!);
    return { lo: b / bins, hi: (b + 1) / bins, n: count, confidence: count ? conf[b]! / count : null, accuracy: count ? hits[b]! / count : null };
  });
  return { rows, ece: points.length ? gap / points.length : null };
}

export interface ConfidenceSummary {
  n: number;
  accuracy: number | null;
  auroc: number | null;
  precisionAt80: number | null;
  precisionAt90: number | null;
  ece: number | null;
  reliability: ReliabilityRow[];
}

export function summarizeConfidence(points: readonly ConfidencePoint[]): ConfidenceSummary {
  const { rows, ece } = reliability(points);
  return {
    n: points.length,
    accuracy: points.length ? points.filter((p) => p.correct).length / points.length : null,
    auroc: auroc(points),
    precisionAt80: precisionAtCoverage(points, 0.8),
    precisionAt90: precisionAtCoverage(points, 0.9),
    ece,
    reliability: rows,
  };
}
