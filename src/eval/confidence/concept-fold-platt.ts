import { InputError } from '../../kb/errors.ts';
import { modelLogit, type CalibrationModel } from '../../link/calibration-model.ts';
import { noteDraw } from '../gold-sampling.ts';
import { fitLogistic } from './logistic-fit.ts';

/** A 1-D logistic map of a model's logit: p = σ(slope · logit + intercept). */
export interface PlattMap {
  slope: number;
  intercept: number;
}

export const CONCEPT_FOLDS = 5;
export const CONCEPT_FOLD_SEED = 7;

/** The concept fold of a scored mention: its smallest gold id (its note for a mention without gold). */
export function conceptGroup(scored: { goldIds: readonly string[]; noteId: string }): string {
  return [...scored.goldIds].sort()[0] ?? scored.noteId;
}

/**
 * Why: fit on the learn part, the calibrator learns that part's concepts (which ones the linker
 * gets right) through many features at once; scored out of fold with folds grouped by gold concept
 * its ECE is 0.041 against 0.018 with note folds (bench/results/concept-folds-calibration-record.txt),
 * and text about other diseases sees the former. For each grouping (`groups[i]`: example i's concept,
 * conceptGroup, or its note) this fits `fit`'s model once per fold without that fold's examples and
 * reads the logits it gives them; the map from those held-out logits, pooled over the groupings, to
 * the labels says how sure the model should be about what it never saw. By concept alone it is
 * calibrated for other diseases; by concept and note pooled, half for them and half for the same ones.
 */
export function pooledFoldPlatt(
  rows: readonly Float64Array[],
  labels: readonly boolean[],
  groupings: readonly (readonly string[])[],
  fit: (rows: Float64Array[], labels: boolean[]) => CalibrationModel,
  options: { folds?: number; seed?: number } = {},
): PlattMap {
  const logits: number[][] = [];
  const pooledLabels: boolean[] = [];
  for (const groups of groupings) {
    for (const z of outOfFoldLogits(rows, labels, groups, fit, options.folds ?? CONCEPT_FOLDS, options.seed ?? CONCEPT_FOLD_SEED)) logits.push([z]);
    pooledLabels.push(...labels);
  }
  const line = fitLogistic(logits, pooledLabels, { l2: 0 });
  const slope = line.weights[0]! / line.scale[0]!;
  if (!(slope > 0)) throw new InputError(`the model's out-of-fold logits do not rank examples it never saw (slope ${slope}): no map to fit (too few concepts or examples for it: --recalibrate none)`, 'BAD_CALIBRATION_DATA');
  return { slope, intercept: line.bias - slope * line.mean[0]! };
}

function outOfFoldLogits(
  rows: readonly Float64Array[],
  labels: readonly boolean[],
  groups: readonly string[],
  fit: (rows: Float64Array[], labels: boolean[]) => CalibrationModel,
  folds: number,
  seed: number,
): Float64Array {
  if (groups.length !== rows.length) throw new InputError(`${rows.length} examples but ${groups.length} fold groups`, 'BAD_CALIBRATION_DATA');
  const foldOf = groups.map((g) => Math.floor(noteDraw(g, seed) * folds) % folds);
  const logits = new Float64Array(rows.length);
  for (let k = 0; k < folds; k++) {
    const train = rows.flatMap((_, i) => (foldOf[i] !== k ? [i] : []));
    const held = rows.flatMap((_, i) => (foldOf[i] === k ? [i] : []));
    if (held.length === 0) continue;
    if (train.length === 0) throw new InputError(`every example falls in one fold: the map needs examples of more concepts (${new Set(groups).size} groups given)`, 'BAD_CALIBRATION_DATA');
    const right = train.filter((i) => labels[i]).length;
    if (right === 0 || right === train.length) {
      throw new InputError(`without fold ${k + 1} of ${folds} every example left is ${right === 0 ? 'wrong' : 'right'}: the map needs more concepts (${new Set(groups).size} groups given; --recalibrate none fits without it)`, 'BAD_CALIBRATION_DATA');
    }
    const model = fit(train.map((i) => rows[i]!), train.map((i) => labels[i]!));
    for (const i of held) logits[i] = modelLogit(model, rows[i]!);
  }
  return logits;
}

/** The same kind of model whose logit is the map applied to `model`'s: no new file format, no cost per link. */
export function withPlatt(model: CalibrationModel, map: PlattMap): CalibrationModel {
  if (model.kind === 'trees') return { ...model, base: map.slope * model.base + map.intercept, rate: map.slope * model.rate };
  return { ...model, weights: model.weights.map((w) => map.slope * w), bias: map.slope * model.bias + map.intercept };
}
