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
  const matchesGold = (id: string): boolean => goldIds.some((g) => view.matches(id, g));
  const rank = predicted.findIndex(matchesGold);
  const goldNil = !goldIds.some((g) => view.resolve(g) !== undefined);
  return {
    hit1: rank === 0,
    hit5: rank >= 0 && rank < TOP_K,
    reciprocalRank: rank >= 0 ? 1 / (rank + 1) : 0,
    similarity: rank === 0 ? 1 : ontologySimilarity(predicted[0], goldIds, view),
    ndcg5: gradedNdcg(predicted, goldIds, view, TOP_K),
    goldNil,
    predictedNil: record.nil,
    confidence: binnedConfidence(record),
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
  const predicted = view.resolve(predictedId);
  let best = 0;
  for (const goldId of goldIds) {
    if (view.matches(predictedId, goldId)) return 1;
    const gold = view.resolve(goldId);
    if (predicted === undefined || gold === undefined) continue;
    const d = predicted === gold ? 0 : view.pathLength(predicted, gold);
    if (d !== undefined) best = Math.max(best, 1 / (1 + d));
  }
  return best;
}

export function scoreRecord(record: MentionRecord, view: OntologyView): ScoredMention {
  return { ...record, scores: scoreMention(record, view) };
}
