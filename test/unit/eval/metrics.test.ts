import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dcg, gradedNdcg, gradedRelevance, idealDcg } from '../../../src/eval/metrics/graded-relevance.ts';
import type { MentionRecord } from '../../../src/eval/metrics/mention-record.ts';
import type { OntologyView } from '../../../src/eval/metrics/ontology-view.ts';
import { computeMetrics, MetricsAccumulator } from '../../../src/eval/metrics/metrics-accumulator.ts';
import { ontologySimilarity, scoreRecord } from '../../../src/eval/metrics/score-mention.ts';
import { fixtureOntology as view } from './fixture-ontology.ts';

const close = (actual: number | null, expected: number, what: string): void => {
  assert.ok(actual !== null && Math.abs(actual - expected) < 1e-6, `${what}: ${actual} ≠ ${expected}`);
};

// log2 values used below: log2(3) = 1.5849625, log2(5) = 2.3219281, log2(6) = 2.5849625.
// Ideal DCG@5 of FIX:A1 (3 at distance 1: A, A1a, A1b; 2 at distance 2: R, A2): gains [3,2,2,2,1]
//   = 3 + 2/1.5849625 + 2/2 + 2/2.3219281 + 1/2.5849625
//   = 3 + 1.2618595 + 1 + 0.8613531 + 0.3868528 = 6.5100654
const IDEAL_A1 = 6.5100654;
// Ideal DCG@5 of FIX:B1 (1 at distance 1: B; 1 at distance 2: R): gains [3,2,1] = 3 + 1.2618595 + 0.5 = 4.7618595
const IDEAL_B1 = 4.7618595;

function record(id: string, goldIds: string[], predicted: string[], extra: Partial<MentionRecord> = {}): MentionRecord {
  return { noteId: 'n1', mentionId: id, goldIds, predicted, nil: false, topScore: 0.5, label: 'SpecificDisease', semanticTypes: [], ...extra };
}

// Six mentions over the fixture hierarchy (test/unit/eval/fixture-ontology.ts).
const RECORDS: MentionRecord[] = [
  // r1 exact at rank 1. Relevances vs A1: A1 3, A1a 2 (child), A2 1 (sibling), B 0 (d 3), X 0.
  //    DCG = 3 + 2/1.5849625 + 1/2 = 4.7618595 → nDCG = 4.7618595 / 6.5100654 = 0.7314620
  record('r1', ['FIX:A1'], ['FIX:A1', 'FIX:A1a', 'FIX:A2', 'FIX:B', 'FIX:X'], { topScore: 0.95, semanticTypes: ['T047'] }),
  // r2 gold is A1's alt id; A1 at rank 2. rr ½; similarity of A1a to A1 (d 1) = ½.
  //    DCG = 2 + 3/1.5849625 = 3.8927893 → nDCG = 3.8927893 / 6.5100654 = 0.5979647
  record('r2', ['ALT:A1'], ['FIX:A1a', 'FIX:A1'], { topScore: 0.8, semanticTypes: ['T047'] }),
  // r3 miss. A2 to A1a is an uncle: d 3 → similarity ¼, relevance 0; B1 d 5, X unrelated → nDCG 0.
  record('r3', ['FIX:A1a'], ['FIX:A2', 'FIX:B1', 'FIX:X'], { topScore: 0.35, label: 'DiseaseClass', semanticTypes: ['T047'] }),
  // r4 gold not in the KB (gold NIL), linker said NIL: a NIL true positive; all ranking scores 0.
  record('r4', ['MESH:D999999'], ['FIX:B'], { nil: true, topScore: 0.1, label: 'Modifier' }),
  // r5 composite gold A1b|B1; B1 at rank 2 → hit@5, rr ½. Similarity of B: to A1b d 4 (⅕), to B1 d 1 (½) → ½.
  //    nDCG vs A1b: 0 (B, B1 unrelated within 2); vs B1: gains [2 (parent), 3] → DCG 3.8927893,
  //    / 4.7618595 = 0.8174930; the best gold counts → 0.8174930.
  record('r5', ['FIX:A1b', 'FIX:B1'], ['FIX:B', 'FIX:B1'], { topScore: 0.62, label: 'DiseaseClass', semanticTypes: ['T047', 'T191'] }),
  // r6 gold in the KB but the linker said NIL with no candidates: a NIL false positive, all 0.
  record('r6', ['FIX:X'], [], { nil: true, topScore: 0, semanticTypes: ['T033'] }),
];

test('graded relevance: 3 exact (alt ids too), 2 parent/child, 1 grandparent/grandchild/sibling, 0 uncle or unrelated', () => {
  assert.equal(gradedRelevance('FIX:A1', 'FIX:A1', view), 3);
  assert.equal(gradedRelevance('FIX:A1', 'ALT:A1', view), 3);
  assert.equal(gradedRelevance('FIX:A', 'FIX:A1', view), 2);
  assert.equal(gradedRelevance('FIX:A1a', 'FIX:A1', view), 2);
  assert.equal(gradedRelevance('FIX:R', 'FIX:A1', view), 1);
  assert.equal(gradedRelevance('FIX:A1a', 'FIX:A', view), 1);
  assert.equal(gradedRelevance('FIX:A2', 'FIX:A1', view), 1);
  assert.equal(gradedRelevance('FIX:A2', 'FIX:A1a', view), 0);
  assert.equal(gradedRelevance('FIX:X', 'FIX:A1', view), 0);
  assert.equal(gradedRelevance('FIX:A1', 'MESH:D999999', view), 0);
});

test('ideal DCG and nDCG, by hand', () => {
  close(dcg([3, 2, 1]), 4.7618595, 'dcg [3,2,1]');
  close(idealDcg('FIX:A1', view, 5), IDEAL_A1, 'ideal A1');
  close(idealDcg('FIX:B1', view, 5), IDEAL_B1, 'ideal B1');
  // X has no neighbours: the ideal is the gold alone, 3, so a lone exact hit scores 1.
  close(gradedNdcg(['FIX:X', 'FIX:A'], ['FIX:X'], view, 5), 1, 'lone root');
  // Monotone: an unrelated candidate after a hit leaves the score alone.
  close(gradedNdcg(['FIX:B1'], ['FIX:B1'], view, 5), 3 / IDEAL_B1, 'B1 alone');
  close(gradedNdcg(['FIX:B1', 'FIX:X'], ['FIX:B1'], view, 5), 3 / IDEAL_B1, 'B1 then X');
  // Only the first 5 count: the parent at rank 6 adds nothing.
  close(gradedNdcg(['FIX:X', 'FIX:X', 'FIX:X', 'FIX:X', 'FIX:X', 'FIX:A1'], ['FIX:A1a'], view, 5), 0, 'cut at 5');
});

test('ontology similarity 1/(1+d) through the LCA, by hand', () => {
  close(ontologySimilarity('FIX:A1', ['ALT:A1'], view), 1, 'alt id');
  close(ontologySimilarity('FIX:A1a', ['FIX:A1'], view), 1 / 2, 'child');
  close(ontologySimilarity('FIX:A1a', ['FIX:A'], view), 1 / 3, 'grandparent');
  close(ontologySimilarity('FIX:A1a', ['FIX:B1'], view), 1 / 6, 'across the root: A1a→A1→A→R←B←B1 = 5');
  close(ontologySimilarity('FIX:X', ['FIX:A'], view), 0, 'no common ancestor');
  close(ontologySimilarity(undefined, ['FIX:A'], view), 0, 'no prediction');
});

test('per-mention scores of the six fixture mentions', () => {
  const s = RECORDS.map((r) => scoreRecord(r, view).scores);
  assert.deepEqual(s.map((x) => [x.hit1, x.hit5]), [[true, true], [false, true], [false, false], [false, false], [false, true], [false, false]]);
  assert.deepEqual(s.map((x) => x.reciprocalRank), [1, 0.5, 0, 0, 0.5, 0]);
  assert.deepEqual(s.map((x) => x.similarity), [1, 0.5, 0.25, 0, 0.5, 0]);
  [0.731462, 0.5979647, 0, 0, 0.817493, 0].forEach((v, i) => close(s[i]!.ndcg5, v, `ndcg r${i + 1}`));
  assert.deepEqual(s.map((x) => [x.goldNil, x.predictedNil]), [[false, false], [false, false], [false, false], [true, true], [false, false], [false, true]]);
});

test("a group named '__proto__' is reported like any other", () => {
  const [first] = RECORDS.map((r) => scoreRecord(r, view));
  const report = computeMetrics([{ ...first!, label: '__proto__' }]);
  assert.deepEqual(Object.keys(report.byLabel), ['__proto__']);
  assert.equal(Object.getPrototypeOf(report.byLabel), Object.prototype);
});

test('aggregate metrics overall, per NER label and per semantic type, by hand', () => {
  const report = computeMetrics(RECORDS.map((r) => scoreRecord(r, view)));
  const o = report.overall;
  assert.equal(o.n, 6);
  close(o.acc1, 1 / 6, 'acc1'); // r1
  close(o.acc5, 3 / 6, 'acc5'); // r1 r2 r5
  close(o.mrr, (1 + 0.5 + 0.5) / 6, 'mrr'); // = 0.3333333
  close(o.nilRate, 2 / 6, 'nil rate'); // r4 r6
  close(o.nilPrecision, 1 / 2, 'nil precision'); // r4 of {r4, r6}
  close(o.nilRecall, 1, 'nil recall'); // r4 of {r4}
  close(o.similarity, (1 + 0.5 + 0.25 + 0 + 0.5 + 0) / 6, 'similarity'); // 2.25/6 = 0.375
  close(o.ndcg5, (0.731462 + 0.5979647 + 0.817493) / 6, 'ndcg5'); // 2.1469197/6 = 0.3578200
  // Calibration, 10 bins: r1 .95 bin 9 hit; r2 .8 bin 8; r3 .35 bin 3; r4 .1 bin 1; r5 .62 bin 6; r6 0 bin 0.
  // ECE = Σ|hits_b − conf_b| / n = (|1−.95| + .8 + .35 + .1 + .62 + 0) / 6 = 1.92 / 6 = 0.32
  close(o.ece, 0.32, 'ece');
  assert.deepEqual(o.reliability.map((b) => b.n), [1, 1, 0, 1, 0, 0, 1, 0, 1, 1]);
  close(o.reliability[9]!.accuracy, 1, 'bin 9 accuracy');
  close(o.reliability[9]!.confidence, 0.95, 'bin 9 confidence');
  assert.equal(o.reliability[2]!.accuracy, null);

  assert.deepEqual(Object.keys(report.byLabel), ['DiseaseClass', 'Modifier', 'SpecificDisease']);
  const sd = report.byLabel.SpecificDisease!; // r1 r2 r6
  close(sd.acc1, 1 / 3, 'SD acc1');
  close(sd.acc5, 2 / 3, 'SD acc5');
  close(sd.mrr, 1.5 / 3, 'SD mrr');
  close(sd.similarity, 1.5 / 3, 'SD similarity');
  assert.equal(sd.nilRecall, null); // no gold NIL among them
  close(sd.nilPrecision, 0, 'SD nil precision'); // r6 NIL, gold in KB
  const dc = report.byLabel.DiseaseClass!; // r3 r5
  close(dc.acc5, 1 / 2, 'DC acc5');
  close(dc.similarity, (0.25 + 0.5) / 2, 'DC similarity');

  assert.deepEqual(Object.keys(report.bySemanticType), ['T033', 'T047', 'T191']);
  const t047 = report.bySemanticType.T047!; // r1 r2 r3 r5
  assert.equal(t047.n, 4);
  close(t047.acc1, 1 / 4, 'T047 acc1');
  close(t047.acc5, 3 / 4, 'T047 acc5');
  close(t047.mrr, 2 / 4, 'T047 mrr');
  close(t047.similarity, 2.25 / 4, 'T047 similarity');
  assert.equal(report.bySemanticType.T191!.n, 1); // r5
});

// The same six from a calibrated linker: each link's confidence its top score, but r6 has no candidates, hence no confidence.
const CALIBRATED: MentionRecord[] = RECORDS.map((r) => ({ ...r, mentionId: `${r.mentionId}c`, confidence: r.predicted.length > 0 ? r.topScore : null }));

test('ECE and reliability bins read only links with a calibrated confidence; with one for every link, exactly the ECE of before', () => {
  const before = computeMetrics(RECORDS.map((r) => scoreRecord(r, view)));
  const allCalibrated = computeMetrics(RECORDS.map((r) => scoreRecord({ ...r, confidence: r.topScore }, view)));
  assert.deepEqual(allCalibrated, before);
  const o = computeMetrics(CALIBRATED.map((r) => scoreRecord(r, view))).overall;
  assert.equal(o.n, 6);
  assert.equal(o.nilRate, before.overall.nilRate, 'the other metrics still count r6');
  // r6 (bin 0) is out: (|1−.95| + .8 + .35 + .1 + .62) / 5 = 1.92 / 5.
  close(o.ece, 1.92 / 5, 'ece');
  assert.deepEqual(o.reliability.map((b) => b.n), [0, 1, 0, 1, 0, 0, 1, 0, 1, 1]);
  // T033 holds r6 alone: no calibrated link, no ECE.
  const t033 = computeMetrics(CALIBRATED.map((r) => scoreRecord(r, view))).bySemanticType.T033!;
  assert.deepEqual([t033.n, t033.ece, t033.acc1], [1, null, 0]);
  // A linker without a calibration: the record says so (null); its top score is still there, a ranking number.
  const uncalibrated = scoreRecord({ ...RECORDS[0]!, confidence: null }, view);
  assert.deepEqual([uncalibrated.topScore, uncalibrated.scores.confidence], [0.95, null]);
  assert.equal(computeMetrics([uncalibrated]).overall.ece, null);
});

test('accumulator: any add/remove sequence equals the batch over what remains, bit for bit', () => {
  const scored = [...RECORDS, ...CALIBRATED].map((r) => scoreRecord(r, view));
  // A deterministic pseudo-random sequence of adds and removes (LCG), ending with a subset inside.
  let state = 12345;
  const next = (): number => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  const acc = new MetricsAccumulator();
  const inside: number[] = [];
  for (let step = 0; step < 500; step++) {
    if (inside.length > 0 && next() < 0.45) {
      const at = Math.floor(next() * inside.length);
      acc.remove(scored[inside[at]!]!);
      inside.splice(at, 1);
    } else {
      const i = Math.floor(next() * scored.length);
      acc.add(scored[i]!);
      inside.push(i);
    }
    if (step % 50 === 49) assert.deepEqual(acc.report(), computeMetrics(inside.map((i) => scored[i]!)), `step ${step}`);
  }
  for (const i of inside.splice(0)) acc.remove(scored[i]!);
  assert.deepEqual(acc.report(), computeMetrics([]));
  assert.equal(acc.size, 0);
});

test('empty input gives nulls, not NaN', () => {
  const o = computeMetrics([]).overall;
  assert.equal(o.n, 0);
  assert.equal(o.acc1, null);
  assert.equal(o.ece, null);
});

test("docs/evaluator.md's nDCG@5 example (a hit, then four unrelated, gold with four parents/children) is what gradedNdcg gives", () => {
  const doc = readFileSync('docs/evaluator.md', 'utf8').replace(/\s+/g, ' ');
  const stated = /scores 3 \/ IDCG — e\.g\. ([\d.]+) for a gold with four or more parents\/children/.exec(doc);
  assert.ok(stated, 'the worked example is in docs/evaluator.md');
  const fourNeighbours: OntologyView = { ...view, resolve: (id) => id, pathLength: (a, b) => (a === b ? 0 : undefined), neighbourhoodSizes: () => ({ atOne: 4, atTwo: 10 }) };
  const ndcg = gradedNdcg(['K:gold', 'K:u1', 'K:u2', 'K:u3', 'K:u4'], ['K:gold'], fourNeighbours, 5);
  assert.equal(Number(stated[1]), Number(ndcg.toFixed(3)));
});
