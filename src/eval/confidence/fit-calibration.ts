import type { ConceptStore } from '../../kb/concept-store.ts';
import { InputError } from '../../kb/errors.ts';
import { ConceptFacts } from '../../link/concept-facts.ts';
import { CALIBRATION_FORMAT, type CalibrationFile } from '../../link/confidence-calibrator.ts';
import { CONFIDENCE_FEATURES } from '../../link/confidence-features.ts';
import type { Linker } from '../../link/linker.ts';
import { fittedLinkConfig } from '../../link/fitted-link-config.ts';
import type { GoldCorpus } from '../gold.ts';
import type { OntologyView } from '../metrics/ontology-view.ts';
import { evaluateCorpus } from '../offline-eval.ts';
import { mentionGroup } from '../metrics/calibration-test.ts';
import { calibrationExamples } from './calibration-examples.ts';
import { holdOutConcepts } from './held-out-concepts.ts';
import { nonEntityExamples } from './non-entity-spans.ts';
import { fitLogistic } from './logistic-fit.ts';
import { fitBoostedTrees, type TreeFitOptions } from './tree-fit.ts';
import { CONCEPT_FOLD_SEED, CONCEPT_FOLDS, conceptGroup, pooledFoldPlatt, withPlatt } from './concept-fold-platt.ts';
import type { CalibrationModel } from '../../link/calibration-model.ts';

/** Share of mentions stranded in each held-out-concept run the NIL part learns from. */
export const NIL_RUN_FRACTION = 0.1;

export const RECALIBRATIONS = ['none', 'concept-folds', 'mixed-folds'] as const;
export type Recalibration = (typeof RECALIBRATIONS)[number];

export type CalibrationModelChoice = { kind: 'logistic'; l2: number } | ({ kind: 'trees' } & TreeFitOptions);

export interface FitCalibrationRequest {
  corpus: GoldCorpus;
  store: ConceptStore;
  view: OntologyView;
  /** Opens a linker without calibration, optionally blind to some concepts. */
  open: (excludeConcepts?: ReadonlySet<string>) => Promise<Linker>;
  /**
   * Opens the same linker with a labelled-mention memory (learned from notes outside the corpus
   * part): its links are added to the "top-1 right" examples, so memory-decided links get a
   * confidence fitted on such links instead of one extrapolated from a fit that never saw one.
   */
  openWithMemory?: () => Promise<Linker>;
  /** The model of both parts: logistic (L2 penalty) or boosted trees. */
  model: CalibrationModelChoice;
  /**
   * `concept-folds`: the right part's logit goes through a map fit on concept-fold logits
   * (src/eval/confidence/concept-fold-platt.ts), so that links to concepts the fit never saw are
   * not read with the fitted concepts' accuracy; `mixed-folds`: on concept-fold and note-fold
   * logits pooled.
   */
  recalibrate?: Recalibration;
  /** Held-out-concept runs (seeds 1..n) the NIL part is fitted on; 0 fits none. */
  nilRuns: number;
  /** Share of mentions without a KB concept a deployment is assumed to see. */
  nilPrevalence: number;
  /**
   * The non-entity part: `perNote` unmarked spans per note (withNonEntitySpans, `seed`) against the
   * natural links, read at `prevalence`, the share of NER false positives a deployment is assumed
   * to see. Absent or perNote 0: no such part.
   */
  nonEntities?: { perNote: number; seed: number; prevalence: number };
  version: string;
  fit: Record<string, unknown>;
}

/**
 * Fits both parts of a calibration on one corpus part: "top-1 right" on the linker's natural
 * output, and "the concept is not in the KB" on held-out-concept runs (seeds 1..nilRuns, never
 * the evaluation seed of `eval --hold-out`), whose stranded mentions are the positives.
 * Returns the file and the right part's examples: features, top-1 right, and each one's
 * ConfidencePoint group (for the in-sample report).
 */
export async function fitCalibration(request: FitCalibrationRequest): Promise<{ file: CalibrationFile; rows: Float64Array[]; labels: boolean[]; pointGroups: string[] }> {
  const { corpus, view } = request;
  const linker = await request.open();
  let result;
  try {
    result = await evaluateCorpus(linker, corpus, view);
  } finally {
    await linker.close();
  }
  const facts = new ConceptFacts(linker.index.concepts);
  const { rows, labels, indices } = calibrationExamples(corpus, result, facts);
  const groups = indices.map((i) => conceptGroup(result.scored[i]!));
  const notes = indices.map((i) => result.scored[i]!.noteId);
  const pointGroups = indices.map((i) => mentionGroup(result.scored[i]!));
  let memoryPass: Record<string, unknown> | undefined;
  if (request.openWithMemory) {
    const withMemory = await request.openWithMemory();
    let linked;
    try {
      linked = await evaluateCorpus(withMemory, corpus, view);
      memoryPass = { mentions: linked.scored.length, memoryVersion: withMemory.versions.memoryVersion, memoryDecided: linked.linked.filter((m) => m.memoryDecided).length, memorySupported: linked.linked.filter((m) => m.memoryDecided === true || (m.memorySupport ?? 0) > 0).length };
    } finally {
      await withMemory.close();
    }
    // Only the links the memory moved: the rest repeat the first pass's links and would count twice.
    const more = calibrationExamples(corpus, linked, facts, undefined, (m) => m.memoryDecided === true || (m.memorySupport ?? 0) > 0);
    rows.push(...more.rows);
    labels.push(...more.labels);
    groups.push(...more.indices.map((i) => conceptGroup(linked.scored[i]!)));
    notes.push(...more.indices.map((i) => linked.scored[i]!.noteId));
    pointGroups.push(...more.indices.map((i) => mentionGroup(linked.scored[i]!)));
  }
  const right = fitModel(request.model, rows, labels);
  const recalibrate = request.recalibrate ?? 'none';
  if (recalibrate !== 'none') {
    const map = pooledFoldPlatt(rows, labels, recalibrate === 'concept-folds' ? [groups] : [groups, notes], (x, y) => fitModel(request.model, x, y).model);
    right.model = withPlatt(right.model, map);
    right.report = { ...right.report, mapSlope: map.slope, mapIntercept: map.intercept };
  }
  const file: CalibrationFile = {
    format: CALIBRATION_FORMAT,
    version: request.version,
    features: [...CONFIDENCE_FEATURES],
    right: right.model,
    models: linker.modelChecksums!,
    fit: { ...request.fit, mentions: rows.length, right: labels.filter(Boolean).length, model: request.model, ...(recalibrate !== 'none' ? { recalibrate: { kind: recalibrate, folds: CONCEPT_FOLDS, seed: CONCEPT_FOLD_SEED } } : {}), ...right.report, versions: linker.versions, linkConfig: fittedLinkConfig(linker.config), ...(memoryPass ? { memoryPass } : {}) },
  };
  if (request.nilRuns > 0) {
    const nilRows: Float64Array[] = [];
    const stranded: boolean[] = [];
    for (let seed = 1; seed <= request.nilRuns; seed++) {
      const heldOut = holdOutConcepts(corpus, request.store, NIL_RUN_FRACTION, seed);
      const blind = await request.open(heldOut.concepts);
      let run;
      try {
        run = await evaluateCorpus(blind, corpus, view);
      } finally {
        await blind.close();
      }
      const examples = calibrationExamples(corpus, run, facts, (s) => heldOut.removed(s.goldIds));
      nilRows.push(...examples.rows);
      stranded.push(...examples.labels);
    }
    const positives = stranded.filter(Boolean).length;
    if (positives === 0) throw new InputError(`no mention lost its concept in ${request.nilRuns} held-out runs: the split is too small for the NIL part (--nil-runs 0 skips it)`, 'BAD_CALIBRATION_DATA');
    const nil = fitModel(request.model, nilRows, stranded);
    file.nil = { model: nil.model, trainedPrevalence: positives / stranded.length, assumedPrevalence: request.nilPrevalence };
    file.fit = { ...file.fit, nil: { runs: request.nilRuns, seeds: `1..${request.nilRuns}`, fraction: NIL_RUN_FRACTION, mentions: stranded.length, stranded: positives, ...nil.report } };
  }
  if (request.nonEntities && request.nonEntities.perNote > 0) {
    const { perNote, seed, prevalence } = request.nonEntities;
    const linker = await request.open();
    let examples;
    try {
      examples = await nonEntityExamples(linker, corpus, request.store, view, facts, perNote, seed);
    } finally {
      await linker.close();
    }
    const positives = examples.labels.filter(Boolean).length;
    if (positives === 0) throw new InputError(`no unmarked span to sample in the ${corpus.notes.length} notes: the non-entity part needs some (--non-entities 0 skips it)`, 'BAD_CALIBRATION_DATA');
    const part = fitModel(request.model, examples.rows, examples.labels);
    file.nonEntity = { model: part.model, trainedPrevalence: positives / examples.labels.length, assumedPrevalence: prevalence };
    file.fit = { ...file.fit, nonEntity: { perNote, seed, spans: examples.sample.spans, mentions: examples.labels.length, positives, ...part.report } };
  }
  return { file, rows, labels, pointGroups };
}

function fitModel(choice: CalibrationModelChoice, rows: Float64Array[], labels: boolean[]): { model: CalibrationModel; report: Record<string, number> } {
  if (choice.kind === 'logistic') {
    const { mean, scale, weights, bias, iterations, logLoss } = fitLogistic(rows, labels, { l2: choice.l2 });
    return { model: { kind: 'logistic', mean, scale, weights, bias }, report: { iterations, logLoss } };
  }
  const { logLoss, ...model } = fitBoostedTrees(rows, labels, choice);
  return { model, report: { logLoss } };
}
