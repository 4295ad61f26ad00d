// Issue 24: do "familiarity" features (how many gold mentions of the link's top-1 concept, or of its text, the fit
// corpus holds outside the link's own note) make the right part honest about concepts it never saw?
// Rule and result: bench/results/familiarity-calibration-record.txt (both failed; nothing shipped).
// Right part only, natural links of the learn part, the shipped trees recipe, fold seeds 93-95.
//   node --import tsx bench/familiarity-oof.ts INDEX_DIR NCBItrainset_corpus.txt
import { fitBoostedTrees } from '../src/eval/confidence/tree-fit.ts';
import { modelLogit } from '../src/link/calibration-model.ts';
import { noteDraw } from '../src/eval/gold-sampling.ts';
import { rightPartRows, summarizeRows, RECIPE_TREES as trees, type Gold, type Row } from './right-part-rows.ts';

const indexDir = process.argv[2]!;
const corpusFile = process.argv[3]!;
const learn = await rightPartRows(indexDir, corpusFile, 'learn');
const tune = await rightPartRows(indexDir, corpusFile, 'tune');
console.error(`learn ${learn.rows.length} rows, tune ${tune.rows.length}`);

type Familiarity = 'concept' | 'surface';
/** ln(1 + n): n gold mentions of `known` outside the row's note naming its top-1 concept, or with its surface. */
function counter(known: Gold[], by: Familiarity = 'concept') {
  const total = new Map<string, number>();
  const perNote = new Map<string, Map<string, number>>();
  for (const g of known) for (const id of by === 'concept' ? new Set(g.gold) : [g.surface]) {
    total.set(id, (total.get(id) ?? 0) + 1);
    let m = perNote.get(g.note); if (!m) perNote.set(g.note, (m = new Map()));
    m.set(id, (m.get(id) ?? 0) + 1);
  }
  const key = (r: Row) => (by === 'concept' ? r.top : r.surface);
  return (r: Row) => Math.log1p((total.get(key(r)) ?? 0) - (perNote.get(r.note)?.get(key(r)) ?? 0));
}
const withF = (rows: Row[], f: ((r: Row) => number) | null) => rows.map((r) => (f ? [...r.x, f(r)] : r.x));
const sig = (z: number) => 1 / (1 + Math.exp(-z));
function score(fitRows: Row[], fitKnown: Gold[], testRows: Row[], familiar: Familiarity | null) {
  const f = familiar ? counter(fitKnown, familiar) : null;
  const model = fitBoostedTrees(withF(fitRows, f), fitRows.map((r) => r.label), trees);
  const { logLoss: _, ...m } = model;
  return withF(testRows, f).map((x) => sig(modelLogit(m as never, x)));
}
const f3 = (x: number) => x.toFixed(3);
const summary = summarizeRows;
for (const kind of ['note', 'concept'] as const) {
  for (const familiar of [null, 'concept', 'surface'] as const) {
    const acc: number[][] = [];
    for (const seed of [93, 94, 95]) {
      const fold = (key: string) => Math.floor(noteDraw(key, 1000 + seed) * 5) % 5;
      const rowFold = (r: Row) => fold(kind === 'note' ? r.note : r.concept);
      const goldFold = (g: Gold) => fold(kind === 'note' ? g.note : g.concept);
      const p = new Array<number>(learn.rows.length);
      for (let k = 0; k < 5; k++) {
        const fitRows = learn.rows.filter((r) => rowFold(r) !== k);
        const known = learn.gold.filter((g) => goldFold(g) !== k);
        const testIdx = learn.rows.map((r, i) => (rowFold(r) === k ? i : -1)).filter((i) => i >= 0);
        const ps = score(fitRows, known, testIdx.map((i) => learn.rows[i]!), familiar);
        testIdx.forEach((i, j) => (p[i] = ps[j]!));
      }
      const s = summary(learn.rows, p);
      acc.push([s.auroc!, s.precisionAt80!, s.ece!]);
      console.log(`${kind} folds seed ${seed} ${familiar ?? 'recipe'}: AUROC ${f3(s.auroc!)} P@80 ${f3(s.precisionAt80!)} ECE ${f3(s.ece!)}`);
    }
    const m = (j: number) => acc.reduce((a, r) => a + r[j]!, 0) / acc.length;
    console.log(`${kind} folds mean ${familiar ?? 'recipe'}: AUROC ${f3(m(0))} P@80 ${f3(m(1))} ECE ${f3(m(2))}`);
  }
}
for (const familiar of [null, 'concept', 'surface'] as const) {
  const p = score(learn.rows, learn.gold, tune.rows, familiar);
  const s = summary(tune.rows, p);
  console.log(`tune (fit on learn) ${familiar ?? 'recipe'}: AUROC ${f3(s.auroc!)} P@80 ${f3(s.precisionAt80!)} ECE ${f3(s.ece!)} (${tune.rows.length})`);
}
// Why the feature reads as it does: how often a link is right when its top-1 concept is unfamiliar.
for (const by of ['concept', 'surface'] as const) {
  const familiarity = counter(learn.gold, by);
  for (const unfamiliar of [true, false]) {
    const rows = learn.rows.filter((r) => (familiarity(r) === 0) === unfamiliar);
    console.log(`learn links whose ${by === 'concept' ? 'top-1' : 'surface'} has ${unfamiliar ? 'no' : 'some'} gold mention outside its note: ${rows.length}, ${f3(rows.filter((r) => r.label).length / rows.length)} right`);
  }
}
