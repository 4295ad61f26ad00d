/**
 * One evaluated mention: gold labels joined with the linker's output. Produced the same way by
 * offline `cuilink eval` and the sidecar evaluator, so both feed identical records to the metrics.
 */
export interface MentionRecord {
  noteId: string;
  mentionId: string;
  /** Normalized acceptable gold ids (composites give several). */
  goldIds: readonly string[];
  /** Predicted concept ids, best first, distinct (the candidate list, NIL or not). */
  predicted: readonly string[];
  /** The linker declared the mention NIL. */
  nil: boolean;
  /**
   * The link's top score: its calibrated confidence, or its `score` where it has none (then a
   * ranking number, not a probability). What a sweep of NIL thresholds reads; never binned.
   */
  topScore: number;
  /**
   * The link's calibrated confidence, what the reliability bins and ECE read; null when it has
   * none (no calibration fits the loaded models, or no candidates). Absent in prediction files
   * written before it existed (their `scores.confidence` is topScore clamped, and counts as it did).
   */
  confidence?: number | null;
  /** The stage that chose the top-1 (LinkedMention.via); absent in files written before it existed. */
  via?: string | null;
  /** NER label of the mention. */
  label: string;
  /** Semantic types of the gold concept(s) in the KB; empty when the gold is not in the KB. */
  semanticTypes: readonly string[];
}

/**
 * Per-mention metric values. The aggregate metrics are means or ratios of sums of these, which
 * is what lets an accumulator add and remove mentions. Stored in per-mention prediction files,
 * so `cuilink compare` needs no KB.
 */
export interface MentionScores {
  /** Gold is the first predicted concept. */
  hit1: boolean;
  /** Gold is among the first k (5) distinct predicted concepts. */
  hit5: boolean;
  /** 1 / rank of the first matching predicted concept; 0 when none matches. */
  reciprocalRank: number;
  /** 1 / (1 + d), d the path length through the LCA from the top prediction to the nearest gold; 0 when unrelated or absent. */
  similarity: number;
  /** Graded nDCG over the first 5 predictions (3 exact, 2 parent/child, 1 grandparent/grandchild/sibling). */
  ndcg5: number;
  /** No gold id is in the KB: the right answer is NIL. */
  goldNil: boolean;
  /** The linker said NIL. */
  predictedNil: boolean;
  /**
   * The calibrated confidence clamped to [0, 1]; null when the link has none, which keeps the
   * mention out of the reliability bins and ECE (every other metric counts it). In files written
   * before `confidence` was recorded: topScore clamped, calibrated or not.
   */
  confidence: number | null;
  /**
   * This mention's row of its reliability bin's hit-count variance under perfect calibration:
   * Σ_j (min(p, p_j) − p p_j) over the mentions of its group (its note's) in
   * its bin that were scored with it, itself included (calibration-test.ts); p(1 − p) alone, 0
   * without a confidence. Absent in files written before it was kept: read as p(1 − p).
   */
  calibrationVariance?: number;
}

export interface ScoredMention extends MentionRecord {
  scores: MentionScores;
}

/** Distinct concept ids in order of first appearance. */
export function distinctInOrder(ids: Iterable<string>): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const id of ids) {
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(id);
  }
  return out;
}
