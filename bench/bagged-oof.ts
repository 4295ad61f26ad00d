// Issue 24: does bagging the right part's trees over gold concepts make them honest about concepts they
// never saw, without making them timid about familiar ones? Rule and result:
// bench/results/bagged-calibration-record.txt. Right part only, natural links of the learn part, the
// shipped trees recipe, fold seeds 96-98, 10 bags.
//   node --import tsx bench/bagged-oof.ts INDEX_DIR NCBItrainset_corpus.txt
import { fitBoostedTrees } from '../src/eval/confidence/tree-fit.ts';
import { modelLogit, type TreesCalibrationModel } from '../src/link/calibration-model.ts';
import { noteDraw } from '../src/eval/gold-sampling.ts';
import { seededRandom } from '../src/eval/seeded-random.ts';
import { rightPartRows, summarizeRows, RECIPE_TREES, type Row } from './right-part-rows.ts';

const BAGS = 10;
const indexDir = process.argv[2]!;
const corpusFile = process.argv[3]!;
const learn = await rightPartRows(indexDir, corpusFile, 'learn');
const tune = await rightPartRows(indexDir, corpusFile, 'tune');
console.error(`learn ${learn.rows.length} rows, tune ${tune.rows.length}`);

function fitRecipe(rows: readonly Row[]): TreesCalibrationModel {
  const { logLoss: _, ...model } = fitBoostedTrees(rows.map((r) => r.x), rows.map((r) => r.label), RECIPE_TREES);
  return model;
}

/** K recipes, each on a bootstrap draw of the rows' concepts, folded into one ensemble: mean base, rate / K. */
function fitBagged(rows: readonly Row[]): TreesCalibrationModel {
  const byConcept = new Map<string, Row[]>();
  for (const r of rows) {
    let list = byConcept.get(r.concept);
    if (!list) byConcept.set(r.concept, (list = []));
    list.push(r);
  }
  const concepts = [...byConcept.keys()].sort();
  const bags: TreesCalibrationModel[] = [];
  for (let k = 0; k < BAGS; k++) {
    const random = seededRandom(7000 + k);
    const bag: Row[] = [];
    for (let c = 0; c < concepts.length; c++) bag.push(...byConcept.get(concepts[Math.floor(random() * concepts.length)]!)!);
    bags.push(fitRecipe(bag));
  }
  return {
    kind: 'trees',
    base: bags.reduce((a, m) => a + m.base, 0) / BAGS,
    rate: RECIPE_TREES.rate / BAGS,
    trees: bags.flatMap((m) => m.trees),
  };
}

const sig = (z: number) => 1 / (1 + Math.exp(-z));
const variants = { recipe: fitRecipe, bagged: fitBagged } as const;
const f3 = (x: number) => x.toFixed(3);
for (const kind of ['note', 'concept'] as const) {
  for (const [name, fit] of Object.entries(variants)) {
    const acc: number[][] = [];
    for (const seed of [96, 97, 98]) {
      const fold = (r: Row) => Math.floor(noteDraw(kind === 'note' ? r.note : r.concept, 1000 + seed) * 5) % 5;
      const p = new Array<number>(learn.rows.length);
      for (let k = 0; k < 5; k++) {
        const model = fit(learn.rows.filter((r) => fold(r) !== k));
        learn.rows.forEach((r, i) => { if (fold(r) === k) p[i] = sig(modelLogit(model, r.x)); });
      }
      const s = summarizeRows(learn.rows, p);
      acc.push([s.auroc!, s.precisionAt80!, s.ece!]);
      console.log(`${kind} folds seed ${seed} ${name}: AUROC ${f3(s.auroc!)} P@80 ${f3(s.precisionAt80!)} ECE ${f3(s.ece!)}`);
    }
    const m = (j: number) => acc.reduce((a, r) => a + r[j]!, 0) / acc.length;
    console.log(`${kind} folds mean ${name}: AUROC ${f3(m(0))} P@80 ${f3(m(1))} ECE ${f3(m(2))}`);
  }
}
for (const [name, fit] of Object.entries(variants)) {
  const model = fit(learn.rows);
  const s = summarizeRows(tune.rows, tune.rows.map((r) => sig(modelLogit(model, r.x))));
  console.log(`tune (fit on learn) ${name}: AUROC ${f3(s.auroc!)} P@80 ${f3(s.precisionAt80!)} ECE ${f3(s.ece!)} (${tune.rows.length})`);
}
