// Does the analytic calibration test (src/eval/metrics/calibration-test.ts) fire on links whose confidence is right?
// Right-part confidences of the learn part scored out of fold (note folds, the shipped trees recipe) are calibrated
// up to the fit's own error; 40 draws of 100 notes each (about dev's size) per fold seed are tested, by it and by
// offline eval's bootstrap floor (calibratedEce, 200 samples a draw), with two groupings of the links that share a draw: a note's links to one top-1 concept, and all of a note's links. A
// valid test fires at alpha on about alpha of the draws. Result: bench/results/calibration-test-validity.txt.
//   node --import tsx bench/calibration-test-validity.ts INDEX_DIR NCBItrainset_corpus.txt
import { fitBoostedTrees } from '../src/eval/confidence/tree-fit.ts';
import { modelLogit } from '../src/link/calibration-model.ts';
import { noteDraw } from '../src/eval/gold-sampling.ts';
import { calibrationChiSquare, groupedCalibrationVariances } from '../src/eval/metrics/calibration-test.ts';
import { calibratedEce } from '../src/eval/confidence/selective-metrics.ts';
import { binOf, toUnits } from '../src/eval/metrics/metric-units.ts';
import { rightPartRows, summarizeRows, RECIPE_TREES, type Row } from './right-part-rows.ts';

const learn = await rightPartRows(process.argv[2]!, process.argv[3]!, 'learn');
const sig = (z: number) => 1 / (1 + Math.exp(-z));
const groupings = { 'note + top-1 concept': (r: Row) => `${r.note}\u0000${r.top}`, note: (r: Row) => r.note } as const;

function testP(rows: readonly Row[], confidence: readonly number[], group: (r: Row) => string): number {
  const variance = groupedCalibrationVariances(rows.map((r, i) => ({ confidence: confidence[i]!, group: group(r) })), 10);
  const hits = new Array<number>(10).fill(0);
  const conf = new Array<number>(10).fill(0);
  const vars = new Array<number>(10).fill(0);
  rows.forEach((r, i) => {
    const b = binOf(toUnits(confidence[i]!), 10);
    hits[b]! += Number(r.label);
    conf[b]! += toUnits(confidence[i]!);
    vars[b]! += toUnits(variance[i]!);
  });
  return calibrationChiSquare(hits, conf, vars)!.p;
}

const notes = [...new Set(learn.rows.map((r) => r.note))].sort();
const fired: Record<string, { at05: number; at01: number; draws: number }> = {};
/** The bootstrap floor's p: the share of calibrated draws whose ECE reaches the observed one. */
function floorP(rows: readonly Row[], confidence: readonly number[], group: (r: Row) => string): number {
  return calibratedEce(rows.map((r, i) => ({ confidence: confidence[i]!, correct: r.label, group: group(r) })), 200)!.pValue;
}
for (const seed of [101, 102, 103, 104, 105, 106, 107, 108]) {
  const fold = (r: Row) => Math.floor(noteDraw(r.note, 1000 + seed) * 5) % 5;
  const p = new Array<number>(learn.rows.length);
  for (let k = 0; k < 5; k++) {
    const fit = learn.rows.filter((r) => fold(r) !== k);
    const { logLoss: _, ...model } = fitBoostedTrees(fit.map((r) => r.x), fit.map((r) => r.label), RECIPE_TREES);
    learn.rows.forEach((r, i) => { if (fold(r) === k) p[i] = sig(modelLogit(model, r.x)); });
  }
  const line = [`seed ${seed}: out-of-fold ECE ${summarizeRows(learn.rows, p).ece!.toFixed(3)}`];
  for (const [name, group] of Object.entries(groupings)) {
    const ps: number[] = [];
    const floors: number[] = [];
    for (let d = 0; d < 40; d++) {
      const keep = new Set(notes.filter((n) => noteDraw(n, 5000 + seed * 100 + d) < 100 / notes.length));
      const idx = learn.rows.map((r, i) => (keep.has(r.note) ? i : -1)).filter((i) => i >= 0);
      const rows = idx.map((i) => learn.rows[i]!);
      const conf = idx.map((i) => p[i]!);
      ps.push(testP(rows, conf, group));
      floors.push(floorP(rows, conf, group));
    }
    for (const [test, values] of [['χ² test', ps], ['bootstrap floor', floors]] as const) {
      const f = (fired[`${test}, ${name}`] ??= { at05: 0, at01: 0, draws: 0 });
      f.at05 += values.filter((x) => x < 0.05).length;
      f.at01 += values.filter((x) => x < 0.01).length;
      f.draws += values.length;
    }
    line.push(`${name}: whole learn χ² p ${testP(learn.rows, p, group).toFixed(3)}, draws under 0.05 χ² ${ps.filter((x) => x < 0.05).length}/40, floor ${floors.filter((x) => x < 0.05).length}/40`);
  }
  console.log(line.join('; '));
}
for (const [name, f] of Object.entries(fired)) console.log(`${name}: fired at 0.05 on ${(f.at05 / f.draws).toFixed(3)} of ${f.draws} draws, at 0.01 on ${(f.at01 / f.draws).toFixed(3)}`);
