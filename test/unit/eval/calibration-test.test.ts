import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chiSquareUpperTail, logGamma, regularizedUpperGamma } from '../../../src/eval/metrics/chi-square.ts';
import { assignGroupedCalibrationVariance, CALIBRATION_MIN_LINKS, calibrationChiSquare, groupedCalibrationVariances, loneCalibrationVariance } from '../../../src/eval/metrics/calibration-test.ts';
import { computeMetrics, MetricsAccumulator } from '../../../src/eval/metrics/metrics-accumulator.ts';
import { applySums, binOf, emptySums, summarize, toUnits, UNIT, type StoredMetricSums } from '../../../src/eval/metrics/metric-sums.ts';
import type { ScoredMention } from '../../../src/eval/metrics/mention-record.ts';
import { calibratedEce } from '../../../src/eval/confidence/selective-metrics.ts';
import { seededRandom } from '../../../src/eval/seeded-random.ts';
import { realisticConfidence, scoredLink, simulateLinks, type SimulatedLink } from './calibration-simulation.ts';

const close = (actual: number, expected: number, tolerance: number, what: string) => assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual}, expected ${expected} ± ${tolerance}`);

test('χ² upper tail: the printed tables\' critical values, and closed forms on both sides of the series / continued-fraction switch', () => {
  // Critical values as tables print them (3 decimals), so p to about 1e-4.
  for (const [x, df, p] of [[18.307, 10, 0.05], [3.841, 1, 0.05], [11.345, 3, 0.01], [6.635, 1, 0.01], [23.209, 10, 0.01], [124.342, 100, 0.05], [0.0158, 1, 0.9], [1.145, 5, 0.95]] as const) {
    close(chiSquareUpperTail(x, df), p, 1.5e-4, `χ²(${df}) at ${x}`);
  }
  // df 2: Q(1, x/2) = e^(−x/2); df 4: Q(2, y) = e^(−y)(1 + y). x/2 below a + 1 takes the series, above it the fraction.
  for (const x of [0.1, 1, 3.9, 4.1, 20, 200]) {
    close(chiSquareUpperTail(x, 2), Math.exp(-x / 2), Math.exp(-x / 2) * 1e-12, `χ²(2) at ${x}`);
    close(chiSquareUpperTail(x, 4), Math.exp(-x / 2) * (1 + x / 2), Math.exp(-x / 2) * (1 + x / 2) * 1e-12, `χ²(4) at ${x}`);
  }
  // A far tail keeps its digits (1 − P would have cancelled to 0): χ²(1) at 50 is erfc(5).
  close(chiSquareUpperTail(50, 1), 1.5374597944280349e-12, 1e-21, 'χ²(1) at 50');
  close(regularizedUpperGamma(0.5, 0.5), 0.31731050786291415, 1e-14, 'Q(½, ½) = erfc(√½)');
  close(logGamma(0.5), Math.log(Math.sqrt(Math.PI)), 1e-14, 'ln Γ(½)');
  close(logGamma(20), Math.log(121645100408832000), 1e-12, 'ln Γ(20) = ln 19!');
  assert.equal(chiSquareUpperTail(0, 3), 1);
  assert.throws(() => chiSquareUpperTail(1, 0), RangeError);
});

function mention(noteId: string, concept: string, confidence: number, hit: boolean, i = 0): ScoredMention {
  return scoredLink({ noteId, concept, confidence, right: hit }, i);
}

/** The sums of mentions scored together, one accumulator. */
function binVariance(mentions: ScoredMention[]): number[] {
  assignGroupedCalibrationVariance(mentions, 10);
  const acc = new MetricsAccumulator();
  for (const m of mentions) acc.add(m);
  return acc.sums().totals.binVariance;
}

test('a lone mention adds p(1 − p) to its bin; two mentions of one note at the same p add 4·p(1 − p), not 2', () => {
  const p = 0.7;
  const lone = binVariance([mention('n1', 'C', p, true)]);
  assert.equal(lone[7], toUnits(p * (1 - p)));
  assert.equal(lone.reduce((a, b) => a + b), lone[7]);
  // One note: one draw, right or wrong together, whatever concepts its links name. Each row is 2·p(1 − p).
  for (const other of ['C', 'D']) {
    const pair = [mention('n1', 'C', p, true, 0), mention('n1', other, p, true, 1)];
    assert.equal(binVariance(pair)[7], 2 * toUnits(2 * p * (1 - p)));
    close(binVariance(pair)[7]! / UNIT, 4 * p * (1 - p), 1e-9, 'pair');
  }
  // Other notes: independent, 2·p(1 − p).
  assert.equal(binVariance([mention('n1', 'C', p, true), mention('n2', 'C', p, true)])[7], 2 * toUnits(p * (1 - p)));
  // Unequal confidences in one bin: Cov = min(p, q) − pq.
  const [a, b] = [0.72, 0.78];
  assert.equal(binVariance([mention('n1', 'C', a, true, 0), mention('n1', 'C', b, false, 1)])[7], toUnits(a * (1 - a) + (a - a * b)) + toUnits(b * (1 - b) + (a - a * b)));
  // A group split across bins: within-bin rows only (covariance between bins is left out).
  const split = binVariance([mention('n1', 'C', 0.75, true, 0), mention('n1', 'C', 0.95, true, 1)]);
  assert.equal(split[7], toUnits(0.75 * 0.25));
  assert.equal(split[9], toUnits(0.95 * 0.05));
});

test('adding and removing mentions in any order restores the variance sums exactly, and equals a batch over those left', () => {
  const random = seededRandom(3);
  const kept = simulateLinks(random, 300, realisticConfidence).map(scoredLink);
  const extra = simulateLinks(random, 120, realisticConfidence).map((l, i) => scoredLink({ ...l, noteId: `x${l.noteId}` }, i));
  assignGroupedCalibrationVariance(kept, 10);
  assignGroupedCalibrationVariance(extra, 10);
  const acc = new MetricsAccumulator();
  for (const m of kept) acc.add(m);
  const before = acc.sums();
  for (const m of extra) acc.add(m);
  assert.notDeepEqual(acc.sums().totals.binVariance, before.totals.binVariance);
  for (const m of [...extra].sort(() => random() - 0.5)) acc.remove(m);
  assert.deepEqual(acc.sums(), before);
  assert.deepEqual(acc.report(), computeMetrics(kept));
  assert.ok(before.totals.binVariance.every(Number.isInteger));
});

test('records and bucket sums written before the variance was kept: lone links p(1 − p); buckets n·c̄(1 − c̄), which add and remove alike', () => {
  const old = mention('n1', 'C', 0.8, true);
  delete old.scores.calibrationVariance;
  assert.equal(computeMetrics([old, { ...old, mentionId: 'm1' }]).overall.calibrationChiSquare, computeMetrics([mention('n1', 'C', 0.8, true), mention('n2', 'C', 0.8, true)]).overall.calibrationChiSquare);
  const acc = new MetricsAccumulator();
  acc.add(mention('n1', 'C', 0.82, true));
  acc.add(mention('n2', 'C', 0.88, false));
  const { binVariance: _dropped, ...stored } = acc.sums().totals;
  const sums = emptySums();
  applySums(sums, stored as StoredMetricSums, 1);
  assert.equal(sums.binVariance[8], toUnits(2 * 0.85 * 0.15));
  assert.ok(sums.binVariance[8]! >= toUnits(0.82 * 0.18) + toUnits(0.88 * 0.12), 'at least the lone links\' variance');
  applySums(sums, stored as StoredMetricSums, -1);
  assert.deepEqual(sums, emptySums());
});

test('sparse bins are pooled: one link at 0.05 that is right does not read as a miscalibrated confidence', () => {
  const calibrated = Array.from({ length: 200 }, (_, i) => mention(`n${i}`, 'C', 0.85, i % 20 < 17, i));
  const summary = computeMetrics([...calibrated, mention('rare', 'C', 0.05, true, 999)]).overall;
  // Unpooled, bin 0 alone would read (1 − 0.05)² / (0.05 · 0.95) = 19 on one degree of freedom, p 1e-5.
  const alone = (0.95 ** 2) / loneCalibrationVariance(0.05);
  close(alone, 19, 1e-9, 'bin 0 alone');
  assert.ok(summary.calibrationP! > 0.05, `pooled p ${summary.calibrationP}`);
  assert.equal(summary.calibrationDf, 1, 'bin 0 joins bin 8: 0.0475 + 200 · 0.1275 is one cell of variance ≥ 5');
  // No variance at all: no test.
  assert.equal(calibrationChiSquare([0, 1], [0, UNIT], [0, 0]), null);
  assert.equal(summarize(emptySums()).calibrationP, null);
  assert.equal(summarize(emptySums()).calibrationDf, 0);
});

/** The window's p with the variance as scored together (grouped), and as if every link were alone. */
function windowP(links: SimulatedLink[]): { grouped: number; lone: number } {
  const scored = links.map(scoredLink);
  assignGroupedCalibrationVariance(scored, 10);
  const grouped = computeMetrics(scored).overall.calibrationP!;
  for (const s of scored) s.scores.calibrationVariance = loneCalibrationVariance(s.scores.confidence!);
  return { grouped, lone: computeMetrics(scored).overall.calibrationP! };
}

test('false alarms: 500 calibrated windows of 400 links with repeated names fire at alpha 0.01 about 1% of the time; taken as lone links they would fire far more', () => {
  const random = seededRandom(11);
  let fired = 0;
  let firedLone = 0;
  const windows = 500;
  for (let w = 0; w < windows; w++) {
    const p = windowP(simulateLinks(random, 400, realisticConfidence));
    if (p.grouped < 0.01) fired++;
    if (p.lone < 0.01) firedLone++;
  }
  assert.ok(fired / windows < 0.03, `calibrated windows fired ${fired} of ${windows}`);
  assert.ok(firedLone / windows > 0.1, `without the grouping ${firedLone} of ${windows}: the grouping is what holds the rate down`);
});

test('false alarms on windows of 200 links, the least the calibration rule judges (CALIBRATION_MIN_LINKS), stay near alpha', () => {
  const random = seededRandom(11);
  let fired = 0;
  const windows = 500;
  for (let w = 0; w < windows; w++) if (windowP(simulateLinks(random, CALIBRATION_MIN_LINKS, realisticConfidence)).grouped < 0.01) fired++;
  assert.ok(fired / windows < 0.02, `calibrated ${CALIBRATION_MIN_LINKS}-link windows fired ${fired} of ${windows}`);
});

test('power: confidence 0.9 on links right 80% of the time fires at alpha 0.01 on 400 links', () => {
  const random = seededRandom(5);
  let lone = 0;
  let grouped = 0;
  for (let w = 0; w < 100; w++) {
    const links = Array.from({ length: 400 }, (_, i): SimulatedLink => ({ noteId: `n${i}`, concept: 'C', confidence: 0.9, right: random() < 0.8 }));
    if (windowP(links).grouped < 0.01) lone++;
    if (windowP(simulateLinks(random, 400, () => 0.9, () => 0.8)).grouped < 0.01) grouped++;
  }
  assert.equal(lone, 100, 'one link per note: every window fires');
  // A note's links standing or falling together carry less evidence than as many lone links: most windows, not all.
  assert.ok(grouped >= 50, `with a note's links alike ${grouped} of 100`);
});

test('the analytic p and the bootstrap calibratedEce p agree in direction: both small on miscalibrated links, neither on calibrated ones', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const random = seededRandom(seed);
    for (const [kind, truth] of [['calibrated', (p: number) => p], ['miscalibrated', (p: number) => p - 0.1]] as const) {
      const links = simulateLinks(random, 1600, realisticConfidence, truth);
      const analytic = windowP(links).grouped;
      const bootstrap = calibratedEce(links.map((l) => ({ confidence: l.confidence, correct: l.right, group: l.noteId })))!.pValue;
      if (kind === 'calibrated') assert.ok(analytic > 0.01 && bootstrap > 0.01, `seed ${seed} calibrated: analytic ${analytic}, bootstrap ${bootstrap}`);
      else assert.ok(analytic < 0.01 && bootstrap < 0.01, `seed ${seed} miscalibrated: analytic ${analytic}, bootstrap ${bootstrap}`);
    }
  }
});

test('each link\'s row is Σ_j (min(p, p_j) − p p_j) over its group in its bin, ties and singletons included', () => {
  const random = seededRandom(21);
  const links = Array.from({ length: 400 }, () => ({
    // Coarse confidences, so ties are common; some without a confidence or a group.
    confidence: random() < 0.05 ? null : Math.round(random() * 40) / 40,
    group: random() < 0.1 ? undefined : `n${Math.floor(random() * 12)}`,
  }));
  const rows = groupedCalibrationVariances(links, 10);
  links.forEach((link, i) => {
    const p = link.confidence;
    let expected = 0;
    if (p !== null && link.group === undefined) expected = loneCalibrationVariance(p);
    else if (p !== null) {
      for (const other of links) {
        const q = other.confidence;
        if (q === null || other.group !== link.group || binOf(toUnits(q), 10) !== binOf(toUnits(p), 10)) continue;
        expected += Math.min(p, q) - p * q;
      }
    }
    close(rows[i]!, expected, 1e-12, `link ${i}`);
  });
});
