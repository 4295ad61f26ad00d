import { loneCalibrationVariance } from './calibration-test.ts';
import { gradedNdcg } from './graded-relevance.ts';
import type { MentionRecord, MentionScores, ScoredMention } from './mention-record.ts';
import type { OntologyView } from './ontology-view.ts';

/** acc@k and nDCG@k use the first K distinct predicted concepts. */
export const TOP_K = 5;

/**
 * The per-mention metric values of one record. acc@k, MRR, similarity and nDCG judge the ranked
 * candidates whether or not the linker called the mention NIL; NIL decisions are judged apart,
 * by NIL precision and recall, so one wrong threshold does not hide a good ranking (or the
 * reverse). See docs/evaluator.md.
 */
export function scoreMention(record: MentionRecord, view: OntologyView): MentionScores {
  const { goldIds, predicted } = record;
  // One lookup per id a prediction answers to, not one `matches` per gold id: gold labels and
  // candidate lists come from topics anyone may write, and their product was the cost of a pair.
  const gold = new Set(goldIds);
  const rank = predicted.findIndex((id) => matchesAny(id, gold, view));
  const goldNil = !goldIds.some((g) => view.resolve(g) !== undefined);
  const confidence = binnedConfidence(record);
  return {
    hit1: rank === 0,
    hit5: rank >= 0 && rank < TOP_K,
    reciprocalRank: rank >= 0 ? 1 / (rank + 1) : 0,
    similarity: rank === 0 ? 1 : ontologySimilarity(predicted[0], goldIds, view),
    ndcg5: gradedNdcg(predicted, goldIds, view, TOP_K),
    goldNil,
    predictedNil: record.nil,
    confidence,
    // As if alone; assignGroupedCalibrationVariance widens it for mentions scored with their group.
    calibrationVariance: confidence === null ? 0 : loneCalibrationVariance(confidence),
  };
}

/**
 * What the reliability bins read: the calibrated confidence, clamped, or null. A record that does
 * not say (`confidence` absent: one built before the field existed) is read as then, by topScore.
 */
function binnedConfidence(record: MentionRecord): number | null {
  const confidence = record.confidence === undefined ? record.topScore : record.confidence;
  if (confidence === null) return null;
  return Number.isFinite(confidence) ? Math.min(1, Math.max(0, confidence)) : 0;
}

/**
 * 1 / (1 + d), d the number of is-a links between the prediction and the nearest gold id through
 * their least common ancestor (French 2022, eq. 4.4): 1 for the gold itself, ½ for a parent or
 * child. 0 when there is no prediction, no gold in the KB or no common ancestor.
 */
export function ontologySimilarity(predictedId: string | undefined, goldIds: readonly string[], view: OntologyView): number {
  if (predictedId === undefined) return 0;
  if (matchesAny(predictedId, new Set(goldIds), view)) return 1;
  const predicted = view.resolve(predictedId);
  if (predicted === undefined) return 0;
  let best = 0;
  // The distance depends on the concept a gold id resolves to, not on how the id is written.
  const measured = new Set<string>();
  for (const goldId of new Set(goldIds)) {
    const gold = view.resolve(goldId);
    if (gold === undefined || measured.has(gold)) continue;
    measured.add(gold);
    const d = predicted === gold ? 0 : view.pathLength(predicted, gold);
    if (d !== undefined) best = Math.max(best, 1 / (1 + d));
  }
  return best;
}

/** `view.matches(predictedId, g)` for some g of `goldIds`, in as many lookups as the ids the prediction answers to. */
function matchesAny(predictedId: string, goldIds: ReadonlySet<string>, view: OntologyView): boolean {
  return view.idsMatchedBy(predictedId).some((id) => goldIds.has(id));
}

export function scoreRecord(record: MentionRecord, view: OntologyView): ScoredMention {
  return { ...record, scores: scoreMention(record, view) };
}
