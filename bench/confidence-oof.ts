// The shipped confidence recipe scored OUT OF FOLD on the learn part of NCBI-disease train (issue 24;
// docs/confidence.md): the learn part is what `cuilink calibrate` fits on, so its own links can only
// be read held out by cross-fitting. Notes are split into 5 folds; each fold's links are scored by a
// calibration fit (both parts, the shipped trees recipe) on the other four folds' natural links,
// memory-moved links and held-out-concept runs 1..n (the file's NIL runs, 4 for the shipped one), and, when the file
// has a non-entity part, the other folds' unmarked spans (the file's count per note and seed). Reports:
//   - AUROC, precision at 80% coverage and ECE of the natural links, and the ECE of memory-moved links
//     (mean over 3 fold seeds);
//   - held-out-concept NIL precision / recall / F1 and what the others lose in linked acc@1 on learn
//     runs 5..12 (never fit on; --test-runs A-B for others), at the file's NIL thresholds (fold seed 1);
//   - with a non-entity part, the share of the fitted spans that come out NIL, each read out of fold.
// This is the repository's version of the scratch experiment harness behind the learn figures of
// docs/confidence.md. Usage (bench/confidence-oof.sh makes the tune-part memory):
//   node --import tsx bench/confidence-oof.ts --index DIR --corpus NCBItrainset_corpus.txt --with-memory TUNE_MEMORY
// Two more questions it can ask (bench/results/concept-folds-calibration-record.txt):
//   --folds note,concept   folds by note (default) and/or by the mention's gold concept (smallest gold id),
//                          so a held-out fold's concepts were never fitted: text with other diseases;
//   --sweep                also print the test runs' NIL curve over thresholds of the score the file decides on;
//   --variant NAME=SPEC    (repeatable) a right part fit differently beside the recipe, SPEC being
//                          `hold:f1+f2` (features held at 0 in the fit), `minLeaf:N`, `model:logistic` (L2 50)
//                          and/or `platt:concept|mixed` (src/eval/confidence/concept-fold-platt.ts), comma-separated.
import { parseArgs } from 'node:util';
import { loadPubTatorCorpus, type GoldCorpus } from '../src/eval/gold.ts';
import { nonEntityExamples } from '../src/eval/confidence/non-entity-spans.ts';
import { kbOntologyView, loadIndexKb } from '../src/eval/kb-ontology-view.ts';
import { evaluateCorpus, keepSplitPart, type OfflineEvalResult } from '../src/eval/offline-eval.ts';
import { calibrationExamples } from '../src/eval/confidence/calibration-examples.ts';
import { holdOutConcepts, nilScoreOf, pooledHoldOutRow, pooledHoldOutSweep, type HeldOutConcepts } from '../src/eval/confidence/held-out-concepts.ts';
import { NIL_RUN_FRACTION } from '../src/eval/confidence/fit-calibration.ts';
import { fitBoostedTrees } from '../src/eval/confidence/tree-fit.ts';
import { fitLogistic } from '../src/eval/confidence/logistic-fit.ts';
import { conceptGroup, pooledFoldPlatt, withPlatt } from '../src/eval/confidence/concept-fold-platt.ts';
import type { CalibrationModel } from '../src/link/calibration-model.ts';
import { summarizeConfidence } from '../src/eval/confidence/selective-metrics.ts';
import { noteDraw } from '../src/eval/gold-sampling.ts';
import { TUNING_SPLIT_SEED } from '../src/eval/tuning-split.ts';
import { ConceptFacts } from '../src/link/concept-facts.ts';
import { CALIBRATION_FORMAT, ConfidenceCalibrator } from '../src/link/confidence-calibrator.ts';
import { CONFIDENCE_FEATURES } from '../src/link/confidence-features.ts';
import { DEFAULT_CALIBRATION, openLinker } from '../src/link/open-linker.ts';
import { DEFAULT_NIL_CONFIDENCE } from '../src/link/link-config.ts';

const { values } = parseArgs({
  options: { index: { type: 'string' }, corpus: { type: 'string' }, 'with-memory': { type: 'string' }, calibration: { type: 'string' }, 'test-runs': { type: 'string' }, folds: { type: 'string' }, sweep: { type: 'boolean' }, variant: { type: 'string', multiple: true } },
});
if (!values.index || !values.corpus) throw new Error('--index DIR --corpus FILE [--with-memory TUNE_MEMORY] [--calibration FILE]');
const indexDir = values.index;
const shipped = ConfidenceCalibrator.load(values.calibration ?? DEFAULT_CALIBRATION);
// The file's NIL thresholds, as a linker without a link config reads them (open-linker.ts).
const thresholds = { confidence: shipped.file.nilConfidence ?? DEFAULT_NIL_CONFIDENCE, inKb: shipped.file.nilInKb ?? 0 };
// The recipe the file records (cuilink calibrate writes fit.model): a fold is fit as the file was.
const recorded = shipped.file.fit.model as { kind?: string; rounds?: number; rate?: number; depth?: number; minLeaf?: number; l2?: number } | undefined;
if (recorded?.kind !== 'trees' || [recorded.rounds, recorded.rate, recorded.depth, recorded.minLeaf, recorded.l2].some((v) => typeof v !== 'number')) {
  throw new Error(`${shipped.path}: fit.model must record a boosted-trees recipe (got ${JSON.stringify(recorded)})`);
}
const trees = { rounds: recorded.rounds!, rate: recorded.rate!, depth: recorded.depth!, minLeaf: recorded.minLeaf!, l2: recorded.l2! };
const prevalence = shipped.file.nil?.assumedPrevalence ?? 0.05;
const FOLDS = 5;
/** The logistic recipe's penalty (cuilink calibrate --calibrator logistic). */
const LOGISTIC_L2 = 50;
/** The held-out runs the file's NIL part was fit on (seeds 1..n, calibrate --nil-runs): each fold's is fit on the same. */
const nilRuns = (shipped.file.fit.nil as { runs?: number } | undefined)?.runs ?? 4;
const TRAIN_RUNS = Array.from({ length: nilRuns }, (_, i) => i + 1);
/** Held-out-concept runs read for NIL (never fit on): 5-12 by default, `--test-runs A-B` for fresh ones. */
const [firstTest, lastTest] = (values['test-runs'] ?? '5-12').split('-').map(Number);
if (!(Number.isInteger(firstTest) && Number.isInteger(lastTest) && firstTest! > TRAIN_RUNS.at(-1)! && lastTest! >= firstTest!)) throw new Error(`--test-runs A-B: seeds after ${TRAIN_RUNS.at(-1)}`);
const TEST_RUNS = Array.from({ length: lastTest! - firstTest! + 1 }, (_, i) => firstTest! + i);
type FoldKind = 'note' | 'concept';
const foldKinds = (values.folds ?? 'note').split(',') as FoldKind[];
if (foldKinds.length === 0 || foldKinds.some((k) => k !== 'note' && k !== 'concept')) throw new Error(`--folds: note and/or concept, comma-separated (got ${values.folds})`);
/** A right part fit otherwise than the recipe: some features held at 0 (never split on), another min leaf. */
interface RightVariant {
  name: string;
  hold: number[];
  minLeaf: number;
  logistic: boolean;
  /** A map of the right part's logit fit on held-out logits: by concept folds, or concept and note folds pooled. */
  platt: 'none' | 'concept' | 'mixed';
}
// The recipe's right part goes through the concept-fold map when the file's did (calibrate --recalibrate).
const recordedKind = (shipped.file.fit.recalibrate as { kind?: string } | undefined)?.kind;
const recordedMap = recordedKind === 'concept-folds' ? 'concept' : recordedKind === 'mixed-folds' ? 'mixed' : 'none';
const variants: RightVariant[] = [{ name: 'recipe', hold: [], minLeaf: trees.minLeaf, logistic: false, platt: recordedMap }, ...(values.variant ?? []).map(parseVariant)];

function parseVariant(text: string): RightVariant {
  const [name, spec] = text.split('=');
  if (!name || !spec) throw new Error(`--variant NAME=SPEC (got ${text})`);
  const variant: RightVariant = { name, hold: [], minLeaf: trees.minLeaf, logistic: false, platt: 'none' };
  for (const part of spec.split(',')) {
    const [key, value] = part.split(':');
    if (key === 'hold' && value) {
      for (const feature of value.split('+')) {
        const j = (CONFIDENCE_FEATURES as readonly string[]).indexOf(feature);
        if (j < 0) throw new Error(`--variant ${name}: no feature ${feature}`);
        variant.hold.push(j);
      }
    } else if (key === 'minLeaf' && Number.isInteger(Number(value)) && Number(value) >= 1) variant.minLeaf = Number(value);
    else if (key === 'model' && value === 'logistic') variant.logistic = true;
    else if (key === 'platt' && (value === 'concept' || value === 'mixed')) variant.platt = value;
    else throw new Error(`--variant ${name}: hold:f1+f2, minLeaf:N, model:logistic, platt:concept|mixed (got ${part})`);
  }
  return variant;
}

const corpus: GoldCorpus = await loadPubTatorCorpus(values.corpus);
keepSplitPart(corpus, 'learn', TUNING_SPLIT_SEED);
const store = await loadIndexKb(indexDir);
const view = kbOntologyView(store);

async function link(options: { memoryDir?: string; excludeConcepts?: ReadonlySet<string> }): Promise<OfflineEvalResult> {
  const linker = await openLinker({ indexDir, calibration: false, memoryPollMs: 0, log: () => {}, ...options });
  try {
    return await evaluateCorpus(linker, corpus, view);
  } finally {
    await linker.close();
  }
}

interface Row {
  note: string;
  /** Its mention's position in the evaluation result. */
  index: number;
  x: Float64Array;
  label: boolean;
  /** Its mention's smallest gold id (the concept fold); the note for spans without gold. */
  concept: string;
}

function examples(result: OfflineEvalResult, facts: ConceptFacts, label?: Parameters<typeof calibrationExamples>[3], keep?: Parameters<typeof calibrationExamples>[4]): Row[] {
  const { rows, labels, indices } = calibrationExamples(corpus, result, facts, label, keep);
  return rows.map((x, i) => {
    const scored = result.scored[indices[i]!]!;
    return { note: scored.noteId, index: indices[i]!, x, label: labels[i]!, concept: conceptGroup(scored) };
  });
}

const started = Date.now();
const natural = await link({});
const facts = new ConceptFacts([...store.values()]);
const naturalRows = examples(natural, facts);
const memoryRows = values['with-memory'] ? examples(await link({ memoryDir: values['with-memory'] }), facts, undefined, (m) => m.memoryDecided === true || (m.memorySupport ?? 0) > 0) : [];
const runRows = async (seed: number) => {
  const heldOut = holdOutConcepts(corpus, store, NIL_RUN_FRACTION, seed);
  return examples(await link({ excludeConcepts: heldOut.concepts }), facts, (s) => heldOut.removed(s.goldIds));
};
// The file's non-entity part (calibrate --non-entities): each fold's is fit on the other folds' spans and links.
const nonEntityFit = shipped.file.nonEntity ? (shipped.file.fit.nonEntity as { perNote: number; seed: number }) : undefined;
const nonEntityRows: Row[] = [];
if (nonEntityFit) {
  const linker = await openLinker({ indexDir, calibration: false, memoryPollMs: 0, log: () => {} });
  try {
    const { result, rows, labels, indices } = await nonEntityExamples(linker, corpus, store, view, facts, nonEntityFit.perNote, nonEntityFit.seed);
    rows.forEach((x, i) => {
      const note = result.scored[indices[i]!]!.noteId;
      nonEntityRows.push({ note, index: indices[i]!, x, label: labels[i]!, concept: note });
    });
  } finally {
    await linker.close();
  }
}
const nilTrain: Row[] = [];
for (const seed of TRAIN_RUNS) nilTrain.push(...(await runRows(seed)));
// Each test run's links are read at the threshold with their out-of-fold confidence in place of none.
const testRuns: { result: OfflineEvalResult; heldOut: HeldOutConcepts; rows: Row[] }[] = [];
for (const seed of TEST_RUNS) {
  const heldOut = holdOutConcepts(corpus, store, NIL_RUN_FRACTION, seed);
  const result = await link({ excludeConcepts: heldOut.concepts });
  testRuns.push({ result, heldOut, rows: examples(result, facts) });
}
console.error(`linked in ${((Date.now() - started) / 1000).toFixed(0)} s: ${naturalRows.length} natural, ${memoryRows.length} memory-moved, ${nilTrain.length} NIL-training, ${testRuns.reduce((n, t) => n + t.rows.length, 0)} test-run links`);

/** The NIL and non-entity parts of fold k: fit as the recipe, whatever the right part's variant. */
function fitOthers(fold: (row: Row) => number, k: number): Pick<ConstructorParameters<typeof ConfidenceCalibrator>[0], 'nil' | 'nonEntity'> {
  const nilRows = nilTrain.filter((r) => fold(r) !== k);
  const nil = fitBoostedTrees(nilRows.map((r) => r.x), nilRows.map((r) => r.label), trees);
  const strandedShare = nilRows.filter((r) => r.label).length / nilRows.length;
  const spanRows = nonEntityRows.filter((r) => fold(r) !== k);
  const nonEntity = shipped.file.nonEntity
    ? { model: strip(fitBoostedTrees(spanRows.map((r) => r.x), spanRows.map((r) => r.label), trees)), trainedPrevalence: spanRows.filter((r) => r.label).length / spanRows.length, assumedPrevalence: shipped.file.nonEntity.assumedPrevalence }
    : undefined;
  return { nil: { model: strip(nil), trainedPrevalence: strandedShare, assumedPrevalence: prevalence }, ...(nonEntity ? { nonEntity } : {}) };
}

function strip({ logLoss: _, ...model }: ReturnType<typeof fitBoostedTrees>): Omit<ReturnType<typeof fitBoostedTrees>, 'logLoss'> {
  return model;
}

function fitOn(fold: (row: Row) => number, k: number, variant: RightVariant, others: ReturnType<typeof fitOthers>): ConfidenceCalibrator {
  const rightRows = [...naturalRows, ...memoryRows].filter((r) => fold(r) !== k);
  const held = (x: Float64Array) => {
    if (variant.hold.length === 0) return x;
    const copy = Float64Array.from(x);
    for (const j of variant.hold) copy[j] = 0;
    return copy;
  };
  const fitRight = (x: Float64Array[], labels: boolean[]): CalibrationModel => {
    if (!variant.logistic) return strip(fitBoostedTrees(x, labels, { ...trees, minLeaf: variant.minLeaf }));
    const { mean, scale, weights, bias } = fitLogistic(x, labels, { l2: LOGISTIC_L2 });
    return { kind: 'logistic', mean, scale, weights, bias };
  };
  const x = rightRows.map((r) => held(r.x));
  const labels = rightRows.map((r) => r.label);
  let right = fitRight(x, labels);
  const concepts = rightRows.map((r) => r.concept);
  if (variant.platt !== 'none') right = withPlatt(right, pooledFoldPlatt(x, labels, variant.platt === 'concept' ? [concepts] : [concepts, rightRows.map((r) => r.note)], fitRight));
  return new ConfidenceCalibrator(
    { format: CALIBRATION_FORMAT, version: 'oof', features: [...CONFIDENCE_FEATURES], right, ...others, models: shipped.file.models, fit: {} },
    '',
    'oof',
  );
}

const foldOf = (seed: number, kind: FoldKind) => (row: Row) => Math.floor(noteDraw(kind === 'concept' ? row.concept : row.note, 1000 + seed) * FOLDS) % FOLDS;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const f = (x: number) => x.toFixed(3);
const g = (x: number | null) => (x === null ? '—' : f(x));
console.log(`calibration recipe of ${shipped.file.version} (trees ${JSON.stringify(trees)}${recordedMap !== 'none' ? ` through the ${recordedMap}-fold map` : ''}), learn part of ${values.corpus.split('/').at(-1)} (seed ${TUNING_SPLIT_SEED}), ${FOLDS} ${foldKinds.join(' / ')} folds`);
for (const kind of foldKinds) {
  const perSeed = variants.map(() => [] as { auroc: number; p80: number; ece: number; memoryEce: number }[]);
  const spanInKb = new Array<number>(nonEntityRows.length);
  const testConfidence = testRuns.map((t) => new Array<{ confidence: number; inKb: number }>(t.rows.length));
  for (const seed of [1, 2, 3]) {
    const fold = foldOf(seed, kind);
    const natural = variants.map(() => new Array<number>(naturalRows.length));
    const memory = variants.map(() => new Array<number>(memoryRows.length));
    for (let k = 0; k < FOLDS; k++) {
      const others = fitOthers(fold, k);
      variants.forEach((variant, v) => {
        const calibrator = fitOn(fold, k, variant, others);
        naturalRows.forEach((r, i) => fold(r) === k && (natural[v]![i] = calibrator.probability(r.x)));
        memoryRows.forEach((r, i) => fold(r) === k && (memory[v]![i] = calibrator.probability(r.x)));
        if (seed !== 1 || v !== 0) return;
        nonEntityRows.forEach((r, i) => r.label && fold(r) === k && (spanInKb[i] = calibrator.inKbProbability(r.x)));
        testRuns.forEach((t, j) => t.rows.forEach((r, i) => fold(r) === k && (testConfidence[j]![i] = { confidence: calibrator.probability(r.x), inKb: calibrator.inKbProbability(r.x) })));
      });
    }
    variants.forEach((_, v) => {
      const s = summarizeConfidence(naturalRows.map((r, i) => ({ confidence: natural[v]![i]!, correct: r.label })));
      const m = summarizeConfidence(memoryRows.map((r, i) => ({ confidence: memory[v]![i]!, correct: r.label })));
      perSeed[v]!.push({ auroc: s.auroc!, p80: s.precisionAt80!, ece: s.ece!, memoryEce: m.ece ?? NaN });
    });
  }
  variants.forEach((variant, v) => {
    const p = perSeed[v]!;
    const label = variants.length > 1 || foldKinds.length > 1 ? `${kind} folds, ${variant.name}: ` : '';
    console.log(`${label}out of fold, mean of fold seeds 1-3: AUROC ${f(mean(p.map((q) => q.auroc)))}, precision at 80% ${f(mean(p.map((q) => q.p80)))}, ECE ${f(mean(p.map((q) => q.ece)))}${memoryRows.length ? `, memory-moved links' ECE ${f(mean(p.map((q) => q.memoryEce)))}` : ''} (${naturalRows.length} links${memoryRows.length ? `, ${memoryRows.length} memory-moved` : ''})`);
  });
  const outOfFoldRuns = testRuns.map((t, j) => {
    const linked = t.result.linked.slice();
    t.rows.forEach((r, i) => (linked[r.index] = { ...linked[r.index]!, ...testConfidence[j]![i]! }));
    return { result: { scored: t.result.scored, linked }, heldOut: t.heldOut };
  });
  const read = pooledHoldOutRow(outOfFoldRuns, thresholds);
  const prefix = foldKinds.length > 1 ? `${kind} folds, recipe: ` : '';
  console.log(`${prefix}held-out-concept runs ${TEST_RUNS[0]}-${TEST_RUNS.at(-1)} (fold seed 1, the file's NIL thresholds: ${thresholds.inKb > 0 ? `P(in KB) < ${thresholds.inKb}` : ''}${thresholds.inKb > 0 && thresholds.confidence > 0 ? ' or ' : ''}${thresholds.confidence > 0 ? `confidence < ${thresholds.confidence}` : ''}): NIL precision ${g(read.nilPrecision)}, recall ${g(read.nilRecall)}, F1 ${g(read.nilF1)}; the others lose ${(read.othersLoss * 100).toFixed(2)} point(s) of linked acc@1 (${read.othersLost} right links, ${read.othersLostMentions} distinct mentions)`);
  if (values.sweep) {
    // The whole curve of the score the file decides on (the other threshold held), for where the file's threshold sits on it.
    const by = nilScoreOf(thresholds);
    console.log(`${prefix}the same runs, NIL when ${by === 'inKb' ? 'P(in KB)' : 'confidence'} < threshold:\n  threshold  NIL-P  NIL-R  NIL-F1  others lose (points; right links; distinct mentions)`);
    for (const row of pooledHoldOutSweep(outOfFoldRuns, by, thresholds)) {
      if (row.threshold < 0.2 || row.threshold > 0.8) continue;
      console.log(`  ${row.threshold.toFixed(3).padEnd(9)}  ${g(row.nilPrecision)}  ${g(row.nilRecall)}  ${g(row.nilF1).padEnd(6)}  ${(row.othersLoss * 100).toFixed(2).padEnd(5)}  ${String(row.othersLost).padStart(4)}  ${String(row.othersLostMentions).padStart(3)}`);
    }
  }
  if (nonEntityFit) {
    const spans = spanInKb.filter((v) => v !== undefined);
    console.log(`${prefix}non-entity spans of the fit (${nonEntityFit.perNote} per note, seed ${nonEntityFit.seed}), out of fold (fold seed 1): ${spans.length}, NIL at P(in KB) < ${thresholds.inKb}: ${spans.filter((v) => v < thresholds.inKb).length} (${((spans.filter((v) => v < thresholds.inKb).length / spans.length) * 100).toFixed(1)}%)`);
  }
}
