import { InputError } from '../kb/errors.ts';
import type { ScoredMention } from './metrics/mention-record.ts';
import { applyScores, binnedCount, calibrationGapUnits, emptySums, summarize, UNIT, type MetricSums } from './metrics/metric-sums.ts';
import { seededRandom } from './seeded-random.ts';

/** The metrics compared, by their MetricSummary field. */
export const COMPARED_METRICS = ['acc1', 'acc5', 'mrr', 'nilRate', 'nilPrecision', 'nilRecall', 'similarity', 'ndcg5', 'ece'] as const;
export type ComparedMetric = (typeof COMPARED_METRICS)[number];

export interface MetricComparison {
  metric: ComparedMetric;
  a: number | null;
  b: number | null;
  /** b − a; null when either side is undefined (e.g. NIL precision with no NIL predictions). */
  difference: number | null;
  /** (r + 1) / (R + 1), r the shuffles whose |difference| is at least the observed one. */
  pValue: number | null;
}

export interface ComparisonResult {
  n: number;
  shuffles: number;
  seed: number;
  metrics: MetricComparison[];
}

/** A scored mention with its text, where its prediction file has it. */
type Paired = ScoredMention & { text?: string };

/**
 * Why two rows of one (noteId, mentionId) are not the same mention, or undefined: the gold ids,
 * label and text come from the corpus alone, so two runs of one corpus agree on them whatever the
 * linker, KB or calibration. Never quotes the text (the files hold note text).
 */
function sameMentionProblem(a: Paired, b: Paired, names: [string, string]): string | undefined {
  const gold = (m: Paired) => [...new Set(m.goldIds)].sort().join('|');
  if (gold(a) !== gold(b)) return `${names[0]} scores it against gold ${gold(a)}, ${names[1]} against ${gold(b)}`;
  if (a.label !== b.label) return `${names[0]} labels it ${a.label}, ${names[1]} ${b.label}`;
  if (a.text !== undefined && b.text !== undefined && a.text !== b.text) return `its text in ${names[0]} and ${names[1]} differs`;
  return undefined;
}

/**
 * Pairs two prediction sets by (noteId, mentionId); they must cover exactly the same mentions, and
 * a pair must be one mention of one corpus (same gold, label and text), else the test would
 * compare unrelated rows. The key keeps the two ids apart: joined with a separator, ids that hold
 * it (n, "z\0m") and ("n\0z", m) would meet.
 */
export function pairPredictions<M extends Paired>(a: readonly M[], b: readonly M[], names: [string, string] = ['A', 'B']): [M, M][] {
  const keyOf = (m: Paired) => JSON.stringify([m.noteId, m.mentionId]);
  const byKey = new Map<string, M>();
  for (const m of b) {
    const key = keyOf(m);
    if (byKey.has(key)) throw new InputError(`${names[1]}: mention ${m.noteId}/${m.mentionId} appears twice`, 'BAD_PREDICTIONS');
    byKey.set(key, m);
  }
  const pairs: [M, M][] = [];
  const seen = new Set<string>();
  for (const m of a) {
    const key = keyOf(m);
    if (seen.has(key)) throw new InputError(`${names[0]}: mention ${m.noteId}/${m.mentionId} appears twice`, 'BAD_PREDICTIONS');
    seen.add(key);
    const other = byKey.get(key);
    if (!other) throw new InputError(`mention ${m.noteId}/${m.mentionId} is in ${names[0]} but not in ${names[1]} (the files must cover the same mentions)`, 'BAD_PREDICTIONS');
    const problem = sameMentionProblem(m, other, names);
    if (problem !== undefined) throw new InputError(`mention ${m.noteId}/${m.mentionId}: ${problem}: the files are not of the same corpus (or of two versions of it), and their rows cannot be paired`, 'BAD_PREDICTIONS');
    pairs.push([m, other]);
  }
  if (pairs.length !== byKey.size) {
    const extra = [...byKey.values()].find((m) => !seen.has(keyOf(m)))!;
    throw new InputError(`mention ${extra.noteId}/${extra.mentionId} is in ${names[1]} but not in ${names[0]} (the files must cover the same mentions)`, 'BAD_PREDICTIONS');
  }
  return pairs;
}

function sumsOf(mentions: Iterable<ScoredMention>): MetricSums {
  const sums = emptySums();
  for (const m of mentions) applyScores(sums, m.scores, 1);
  return sums;
}

function copySums(s: MetricSums): MetricSums {
  return { ...s, binCount: [...s.binCount], binConfidence: [...s.binConfidence], binHits: [...s.binHits] };
}

/**
 * Each compared metric as summarize() defines it, but as integer numerator / denominator of the
 * sums (units where real-valued), so that gaps are compared exactly: a ratio of other counts can
 * reach the same gap through another rounding (|0 − 2/3| is 0.6666666666666666 in floating point,
 * |1/3 − 1| 0.6666666666666667), and such a shuffle must count as reaching the observed gap.
 */
const PARTS: Record<ComparedMetric, (s: MetricSums) => [number, number]> = {
  acc1: (s) => [s.hit1, s.n],
  acc5: (s) => [s.hit5, s.n],
  mrr: (s) => [s.reciprocalRank, s.n * UNIT],
  nilRate: (s) => [s.predictedNil, s.n],
  nilPrecision: (s) => [s.nilAgree, s.predictedNil],
  nilRecall: (s) => [s.nilAgree, s.goldNil],
  similarity: (s) => [s.similarity, s.n * UNIT],
  ndcg5: (s) => [s.ndcg5, s.n * UNIT],
  ece: (s) => [calibrationGapUnits(s), binnedCount(s) * UNIT],
};

/** |y − x| of a metric as an exact fraction [numerator, denominator]; null when either side is undefined. */
function gap(x: MetricSums, y: MetricSums, metric: ComparedMetric): [bigint, bigint] | null {
  const [nx, dx] = PARTS[metric](x);
  const [ny, dy] = PARTS[metric](y);
  if (dx === 0 || dy === 0) return null;
  const numerator = BigInt(ny) * BigInt(dx) - BigInt(nx) * BigInt(dy);
  return [numerator < 0n ? -numerator : numerator, BigInt(dx) * BigInt(dy)];
}

function atLeast(got: [bigint, bigint], want: [bigint, bigint]): boolean {
  return got[0] * want[1] >= want[0] * got[1];
}

/**
 * Approximate randomization (Noreen 1989; the pseudocode in French 2022, fig. 4): for each of R
 * shuffles, swap the two systems' outputs for each mention with probability ½ and count the
 * shuffles whose absolute metric difference is at least the observed one; p = (r + 1) / (R + 1).
 * Metrics come from the shared metrics module's integer sums and gaps are compared as exact
 * fractions of them, so identical inputs differ by exactly 0 and give p = 1. A shuffle where a
 * ratio metric has no denominator counts as "at least as large" (the conservative choice).
 */
export function approximateRandomization(pairs: readonly [ScoredMention, ScoredMention][], options: { shuffles: number; seed: number }): ComparisonResult {
  const { shuffles, seed } = options;
  const baseA = sumsOf(pairs.map((p) => p[0]));
  const baseB = sumsOf(pairs.map((p) => p[1]));
  const observedA = summarize(baseA);
  const observedB = summarize(baseB);
  const observed = COMPARED_METRICS.map((metric) => gap(baseA, baseB, metric));
  const reaching = COMPARED_METRICS.map(() => 0);
  const random = seededRandom(seed);
  for (let r = 0; r < shuffles; r++) {
    const x = copySums(baseA);
    const y = copySums(baseB);
    for (const [a, b] of pairs) {
      if (random() < 0.5) continue;
      applyScores(x, a.scores, -1);
      applyScores(x, b.scores, 1);
      applyScores(y, b.scores, -1);
      applyScores(y, a.scores, 1);
    }
    COMPARED_METRICS.forEach((metric, i) => {
      const want = observed[i];
      if (want === null || want === undefined) return;
      const got = gap(x, y, metric);
      if (got === null || atLeast(got, want)) reaching[i]!++;
    });
  }
  return {
    n: pairs.length,
    shuffles,
    seed,
    metrics: COMPARED_METRICS.map((metric, i) => {
      const a = observedA[metric];
      const b = observedB[metric];
      const difference = a === null || b === null ? null : b - a;
      return { metric, a, b, difference, pValue: observed[i] === null ? null : (reaching[i]! + 1) / (shuffles + 1) };
    }),
  };
}
