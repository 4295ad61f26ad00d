import { chiSquareUpperTail } from './chi-square.ts';
import type { ScoredMention } from './mention-record.ts';
import { binOf, toUnits, UNIT } from './metric-units.ts';

/**
 * An analytic test of calibration that needs only additive per-bin sums, so a rolling window
 * can compute it: offline eval's bootstrap (calibratedEce) needs the links themselves.
 *
 * Under perfect calibration a link is right with probability its confidence p, and links that
 * stand or fall together (a note's links: calibratedEce's groups) share one uniform draw u, right
 * when u < p. A note's links are more alike than independent draws, or draws shared only by a
 * repeated name, allow: grouped by note and concept, this test and the bootstrap floor fired on 3x
 * their alpha of calibrated draws, grouped by note at about alpha
 * (bench/results/calibration-test-validity.txt). Two links i, j of a group then have
 * Cov(hit_i, hit_j) = min(p_i, p_j) − p_i p_j, so the variance of a reliability bin's hit count is
 * Σ over its groups of Σ_i Σ_j (min(p_i, p_j) − p_i p_j), i and j the group's links in that bin. Each
 * link carries its row of that double sum (calibrationVariance): bins add and remove links with
 * exactly what they brought. A lone link's row is p(1 − p).
 */

/** The variance of a link's hit under calibration, alone: p(1 − p). */
export function loneCalibrationVariance(confidence: number): number {
  return confidence * (1 - confidence);
}

export interface GroupedConfidence {
  /** Clamped to [0, 1]; null keeps the link out of the bins (its row is 0). */
  confidence: number | null;
  /** Links of one group share a draw; undefined: alone. */
  group: string | undefined;
}

/** Each link's row sum over the links of its group in its reliability bin (bins as in metric-sums.ts). */
export function groupedCalibrationVariances(links: readonly GroupedConfidence[], bins: number): number[] {
  const cells = new Map<string, number[]>();
  const binned = links.map((link) => (link.confidence === null ? -1 : binOf(toUnits(link.confidence), bins)));
  links.forEach((link, i) => {
    if (link.confidence === null || link.group === undefined) return;
    const key = `${binned[i]}\u0000${link.group}`;
    const members = cells.get(key);
    if (members) members.push(i);
    else cells.set(key, [i]);
  });
  const rows = links.map((link) => (link.confidence === null ? 0 : loneCalibrationVariance(link.confidence)));
  // Sorted by confidence, Σ_j min(p_i, p_j) is the sum up to i plus p_i for each link above it:
  // n log n a cell, not n² (a note is one group, and a LinkedNote may hold thousands of mentions).
  for (const members of cells.values()) {
    const sorted = members.map((i) => ({ p: links[i]!.confidence!, i })).sort((a, b) => a.p - b.p);
    const total = sorted.reduce((sum, m) => sum + m.p, 0);
    let below = 0;
    sorted.forEach(({ p, i }, r) => {
      below += p;
      rows[i] = below + p * (sorted.length - 1 - r) - p * total;
    });
  }
  return rows;
}

/**
 * The links that share a draw: a note's, here and in calibratedEce's points (offline-eval.ts). A
 * note's links are more alike than independent draws, or draws shared only by a repeated name,
 * allow (bench/results/calibration-test-validity.txt).
 */
export function mentionGroup(mention: Pick<ScoredMention, 'noteId'>): string {
  return mention.noteId;
}

/**
 * Sets `scores.calibrationVariance` of mentions scored together, grouped by note. Only the mentions given are grouped: a group whose mentions are scored in separate
 * calls (the sidecar, when gold arrives after its note) counts as separate groups, which
 * understates the variance a little (the test then fires a little more easily than it should).
 */
export function assignGroupedCalibrationVariance(mentions: readonly ScoredMention[], bins: number): void {
  const rows = groupedCalibrationVariances(mentions.map((m) => ({ confidence: m.scores.confidence, group: mentionGroup(m) })), bins);
  mentions.forEach((m, i) => {
    m.scores.calibrationVariance = rows[i]!;
  });
}

/**
 * Adjacent bins are pooled, from the lowest, until a cell's variance reaches this: the χ²
 * distribution of Σ (hits − Σp)² / V holds only where a cell's hit count is close to normal, and
 * a bin of a few links (one link at 0.95 that misses reads χ² 19 on its own) would fire the test
 * on calibrated links several times as often as its alpha. 5 is the "expected count ≥ 5" rule of
 * thumb: near p = 0 or 1, V ≈ the expected count of the rarer outcome.
 */
export const MIN_CELL_VARIANCE = 5;

/**
 * The fewest binned links on which the test means what it says. A note's links share a draw, so a
 * window of 50 links is a dozen notes: calibrated ones fired at alpha 0.01 on 3% of seeded windows,
 * and pooling bins does not help (too few notes, not too few links a bin); from 200 links on they
 * fire at about alpha (test/unit/eval/calibration-test.test.ts). The evaluator's calibration rule
 * judges no window smaller.
 */
export const CALIBRATION_MIN_LINKS = 200;

export interface CalibrationTest {
  chiSquare: number;
  /** Cells the bins were pooled into: the degrees of freedom. */
  df: number;
  /** P(χ²(df) ≥ chiSquare) under perfect calibration. */
  p: number;
}

/**
 * χ² = Σ_c (hits_c − Σp_c)² / V_c over cells c of adjacent bins pooled until V_c ≥
 * MIN_CELL_VARIANCE (what is left at the top joins the last cell), df = the cells; sums in units
 * as in metric-sums.ts (hits are counts). Covariance between bins (a group split across bins) is
 * left out. Null when no bin has variance (no binned link, or every confidence 0 or 1).
 */
export function calibrationChiSquare(binHits: readonly number[], binConfidenceUnits: readonly number[], binVarianceUnits: readonly number[]): CalibrationTest | null {
  const cells: { gap: number; variance: number }[] = [];
  let gap = 0;
  let variance = 0;
  binVarianceUnits.forEach((v, b) => {
    gap += binHits[b]! * UNIT - binConfidenceUnits[b]!;
    variance += v;
    if (variance >= MIN_CELL_VARIANCE * UNIT) {
      cells.push({ gap, variance });
      gap = 0;
      variance = 0;
    }
  });
  if (variance > 0 || gap !== 0) {
    const last = cells.at(-1);
    if (last) {
      last.gap += gap;
      last.variance += variance;
    } else if (variance > 0) cells.push({ gap, variance });
  }
  if (cells.length === 0) return null;
  let chiSquare = 0;
  for (const cell of cells) chiSquare += (cell.gap / UNIT) ** 2 / (cell.variance / UNIT);
  return { chiSquare, df: cells.length, p: chiSquareUpperTail(chiSquare, cells.length) };
}

/** A p-value as it reads: 3 decimals, or 2 significant digits below 0.001 (a drift shows as 1.2e-9, not 0.000). */
export function formatPValue(p: number): string {
  return p >= 0.001 || p === 0 ? p.toFixed(3) : p.toExponential(1);
}
