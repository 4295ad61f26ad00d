// The sidecar's calibration test and its opt-in alert (--calibration-alpha), end to end through
// the evaluator: joined pairs, rolling windows, alert transitions, /metrics and the state file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LinkedMention, LinkedNote } from '../../../src/link/types.ts';
import type { GoldMention } from '../../../src/eval/gold.ts';
import { SidecarEvaluator, type SidecarOptions, type SidecarSnapshot } from '../../../src/eval/sidecar/sidecar-evaluator.ts';
import { EvaluatorMetrics } from '../../../src/eval/sidecar/otel-metrics.ts';
import { computeMetrics } from '../../../src/eval/metrics/metrics-accumulator.ts';
import { fixtureOntology } from './fixture-ontology.ts';

function linked(mentionId: string, confidence: number | null, conceptId: string): LinkedMention {
  return {
    mentionId, start: 0, end: 3, label: 'Disease', conceptId, conceptName: null, semanticTypes: [], score: 0.9, confidence, via: 'dense', nil: false, reranked: false,
    candidates: [{ conceptId, name: conceptId, semanticTypes: [], score: 0.9, retrievalScore: 0.9, exact: false, via: 'dense' }],
  };
}

/** One note of `right.length` mentions of gold FIX:A1, linked to it (right) or to FIX:B (wrong), at `confidence`. */
function labelledNote(noteId: string, confidence: number | null, right: boolean[]): { gold: GoldMention[]; note: LinkedNote } {
  const ids = right.map((_, i) => `m${i}`);
  return {
    gold: ids.map((mentionId) => ({ noteId, mentionId, ids: ['FIX:A1'], label: 'Disease', start: 0, end: 3 })),
    note: { noteId, linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 0, mentions: ids.map((id, i) => linked(id, confidence, right[i] ? 'FIX:A1' : 'FIX:B')) },
  };
}

/** Gold first, then the note: the pairs join as the note arrives. */
function feed(ev: SidecarEvaluator, noteId: string, confidence: number | null, right: boolean[], now: number): void {
  const { gold, note } = labelledNote(noteId, confidence, right);
  for (const g of gold) ev.addGold(g, now);
  ev.addLinkedNote(note, now);
}

const OPTIONS: SidecarOptions = { joiner: { ttlMs: 3_600_000, maxPending: 10_000 }, windows: { lastN: 10_000, lastMs: 60_000 }, alerts: { calibrationAlpha: 0.01, minSamples: 100 } };

test('--calibration-alpha: a confidence of 0.9 on links right 80% of the time fires; the time window resolves once only calibrated links are left in it', async () => {
  const logs: string[] = [];
  const ev = new SidecarEvaluator(fixtureOntology, OPTIONS, (line) => logs.push(line), undefined, 0);
  // 200 lone links (one per note) at 0.9, every fifth wrong.
  for (let i = 0; i < 200; i++) feed(ev, `a${i}`, 0.9, [i % 5 !== 4], 1_000);
  // Judged from the 200th (CALIBRATION_MIN_LINKS, above --min-samples 100): 160 right where 180 were due, variance 200 · 0.09: χ² 400 / 18 on 1 df.
  assert.equal(logs.length, 2, logs.join('\n'));
  assert.match(logs[0]!, /^ALERT firing: calibration test p 2\.4e-6 in the count window is below --calibration-alpha \(0\.01\)/);
  assert.match(logs[1]!, /^ALERT firing: calibration test p 2\.4e-6 in the time window/);
  let report = ev.report(1_000);
  // At 200: 160 right of 180 due, variance 18, χ² 400 / 18.
  assert.ok(Math.abs(report.windows.count.overall.calibrationChiSquare! - 400 / 18) < 1e-6, `χ² ${report.windows.count.overall.calibrationChiSquare}`);
  assert.equal(report.windows.count.overall.calibrationDf, 1);
  assert.deepEqual(report.alerts.map((a) => [a.rule, a.window, a.firing, a.threshold]), [['calibration', 'count', true, 0.01], ['calibration', 'time', true, 0.01]]);

  // Two minutes later, calibrated links (every tenth wrong): the first bucket of them pushes the
  // old ones out of the 1-minute time window, which is judged again once it holds 200.
  for (let i = 0; i < 200; i++) feed(ev, `b${i}`, 0.9, [i % 10 !== 9], 121_000);
  assert.deepEqual(logs.slice(2), ['ALERT resolved: calibration test p 1.000 in the time window is back at or above --calibration-alpha (0.01)']);
  report = ev.report(121_000);
  assert.equal(report.windows.time.overall.n, 200);
  assert.equal(report.windows.time.overall.calibrationP, 1);
  // The count window still holds both: 340 right of 360 due, still firing.
  assert.ok(report.windows.count.overall.calibrationP! < 0.01);
  assert.deepEqual(report.alerts.map((a) => [a.window, a.firing, a.calibrationP]), [['count', true, report.windows.count.overall.calibrationP], ['time', false, 1]]);

  const metrics = new EvaluatorMetrics(() => report);
  try {
    const text = await metrics.text();
    assert.match(text, /^cuilink_eval_alert\{rule="calibration",window="count"\} 1$/m);
    assert.match(text, /^cuilink_eval_alert\{rule="calibration",window="time"\} 0$/m);
    assert.match(text, /^cuilink_eval_calibration_p\{window="time",by="overall",group="all"\} 1$/m);
    assert.match(text, /^cuilink_eval_calibration_p\{window="count",by="ner_label",group="Disease"\} \d/m);
  } finally {
    await metrics.shutdown();
  }
});

test('links without a calibrated confidence: no calibration p on /report or /metrics, and the rule is never judged', async () => {
  const logs: string[] = [];
  const ev = new SidecarEvaluator(fixtureOntology, { ...OPTIONS, alerts: { calibrationAlpha: 0.5, minSamples: 1 } }, (line) => logs.push(line), undefined, 0);
  for (let i = 0; i < 50; i++) feed(ev, `n${i}`, null, [i % 2 === 0], 0);
  const report = ev.report(0);
  assert.equal(report.windows.count.overall.calibrationP, null);
  assert.deepEqual(logs, []);
  assert.deepEqual(report.alerts.map((a) => [a.rule, a.firing, a.calibrationP]), [['calibration', false, null], ['calibration', false, null]]);
  const metrics = new EvaluatorMetrics(() => report);
  try {
    assert.doesNotMatch(await metrics.text(), /cuilink_eval_calibration_p\{/);
  } finally {
    await metrics.shutdown();
  }
});

test('a note\'s repeated mentions are one group when scored together; when their gold comes after the note they count as lone links', () => {
  const p = 0.7;
  const ev = new SidecarEvaluator(fixtureOntology, OPTIONS, () => {}, undefined, 0);
  feed(ev, 'together', p, [true, true], 0);
  const { gold, note } = labelledNote('apart', p, [true, true]);
  ev.addLinkedNote(note, 0);
  for (const g of gold) ev.addGold(g, 0);
  const rows = (noteId: string) => ev.snapshot(0).windows.filter((e) => e.mention.noteId === noteId).map((e) => e.mention.scores.calibrationVariance);
  assert.deepEqual(rows('together'), [2 * p * (1 - p), 2 * p * (1 - p)]);
  assert.deepEqual(rows('apart'), [p * (1 - p), p * (1 - p)]);
});

test('a restart keeps the calibration test bit for bit; a state file written before the variance was kept restores lone links and bucket bounds', () => {
  const ev = new SidecarEvaluator(fixtureOntology, OPTIONS, () => {}, undefined, 0);
  for (let i = 0; i < 60; i++) feed(ev, `n${i}`, 0.6 + (i % 4) / 10, [i % 3 !== 0, i % 2 === 0], 1_000 + i);
  const snapshot = JSON.parse(JSON.stringify(ev.snapshot(2_000))) as SidecarSnapshot;
  const restored = new SidecarEvaluator(fixtureOntology, OPTIONS, () => {}, snapshot, 2_000);
  assert.deepEqual(restored.report(2_000).windows, ev.report(2_000).windows);

  // The same state as an older evaluator wrote it: no calibrationVariance, no binVariance.
  const old = JSON.parse(JSON.stringify(snapshot)) as SidecarSnapshot;
  for (const entry of old.windows) delete entry.mention.scores.calibrationVariance;
  for (const bucket of old.timeWindow!) for (const sums of [bucket.sums.totals, ...Object.values(bucket.sums.byLabel), ...Object.values(bucket.sums.bySemanticType)]) delete sums.binVariance;
  const fromOld = new SidecarEvaluator(fixtureOntology, OPTIONS, () => {}, old, 2_000).report(2_000).windows;
  // Each note's two mentions were one group; restored, every link is alone: less variance.
  const asLone = snapshot.windows.map((e) => ({ ...e.mention, scores: { ...e.mention.scores, calibrationVariance: e.mention.scores.confidence! * (1 - e.mention.scores.confidence!) } }));
  assert.deepEqual(fromOld.count.overall, computeMetrics(asLone).overall);
  const total = (rows: { scores: { calibrationVariance?: number } }[]) => rows.reduce((sum, e) => sum + e.scores.calibrationVariance!, 0);
  assert.ok(total(asLone) < total(snapshot.windows.map((e) => e.mention)), 'restored as lone links: less variance');
  // The time window's buckets get n·c̄(1 − c̄) per bin; here each bin holds one confidence, so that is the lone links' sum.
  assert.equal(fromOld.time.overall.n, 120);
  assert.ok(Math.abs(fromOld.time.overall.calibrationChiSquare! - fromOld.count.overall.calibrationChiSquare!) < 1e-6);
});
