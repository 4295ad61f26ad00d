import type { LinkIndex } from '../retrieve/link-index.ts';
import type { ConceptHit } from '../retrieve/candidate-retriever.ts';
import type { Reranker } from '../rerank/reranker.ts';
import type { LinkConfig } from './link-config.ts';
import { batchGroups, type BatchScope, type MentionWork } from './mention-work.ts';
import { nextContender } from './rerank-pruning.ts';

export interface RerankPhaseParts {
  reranker: Reranker;
  config: LinkConfig;
  index: LinkIndex;
  batchScope: BatchScope;
  /** Keep each mention's hits before reranking (the link cache's two stages, for a reranker that reads context). */
  keepBefore: boolean;
  /**
   * The most a later tie-break (the memory's votes and prior) can add to a score: pruning keeps
   * scoring every candidate that could win with it, so the top-1 stays that of scoring all.
   */
  tieBreakSlack?: number;
}

/** Whether the cross-encoder weighs in on a mention (config.rerank.policy and margin). */
export function needsRerank(w: MentionWork, rerank: LinkConfig['rerank']): boolean {
  const { policy, margin } = rerank;
  if (policy === 'never' || w.hits.length < 2 || w.memoryDecided) return false;
  if (policy === 'always') return true;
  const [first, second] = w.hits as [ConceptHit, ConceptHit];
  // Only a unique true exact name match goes unscored: fuzzy lookups and abbreviations are weighed too.
  if (policy === 'inexact') return !(first.exact && !second.exact);
  if (first.lexical && !second.lexical) return false;
  return first.score - second.score < margin || (first.lexical && second.lexical);
}

/**
 * Reranks, in place, the top candidates of the mentions that need it: each scored candidate's
 * score becomes weight × cross-encoder probability + (1 − weight) × its retrieval score.
 */
export async function rerankMentions(work: MentionWork[], parts: RerankPhaseParts): Promise<void> {
  const { reranker, config, index, batchScope: scope } = parts;
  const chosen = work.filter((w) => needsRerank(w, config.rerank));
  if (chosen.length === 0) return;
  const weight = config.rerank.weight;
  const heads = chosen.map((w) => w.hits.slice(0, config.rerank.candidates));
  const queries = chosen.map((w) => w.rerankQuery);
  // Pure pair scores (each pair alone, or rows that do not interact) let the candidates that cannot win go unscored.
  const prune = scope !== 'note' && config.rerank.prune;
  // With int8, each pair alone when pruning (so the top-1 equals scoring all), else per mention.
  const groups = prune && scope === 'mention' ? 'pair' : batchGroups(chosen, scope);
  const score = (picks: number[][]) =>
    reranker.rerank(chosen.map((_, i) => ({ query: queries[i]!, candidates: picks[i]!.map((j) => index.concepts[heads[i]![j]!.conceptIndex]!) })), groups);
  let scoredOf: number[][];
  let probabilities: Float32Array[];
  if (prune) {
    // Rounds, best-retrieved first: the best final score so far bounds which others can still win.
    const retrieval = chosen.map((w, i) => w.scores.slice(0, heads[i]!.length));
    scoredOf = chosen.map(() => []);
    const found: number[][] = chosen.map(() => []);
    const best = chosen.map(() => -Infinity);
    for (;;) {
      const next = retrieval.map((r, i) => nextContender(r, weight, best[i]! - (parts.tieBreakSlack ?? 0), scoredOf[i]!));
      if (next.every((j) => j === undefined)) break;
      const round = await score(next.map((j) => (j === undefined ? [] : [j])));
      next.forEach((j, i) => {
        if (j === undefined) return;
        const p = round[i]![0]!;
        scoredOf[i]!.push(j);
        found[i]!.push(p);
        best[i] = Math.max(best[i]!, weight * p + (1 - weight) * retrieval[i]![j]!);
      });
    }
    probabilities = found.map((p) => Float32Array.from(p));
  } else {
    scoredOf = heads.map((h) => h.map((_, j) => j));
    probabilities = await score(scoredOf);
  }
  chosen.forEach((w, i) => {
    if (parts.keepBefore) w.beforeRerank = { hits: w.hits.slice(), scores: w.scores.slice() };
    const p = probabilities[i]!;
    // w.scores, not hit.score: the retrieval score after sparse fusion and the hierarchy preference.
    const scored = scoredOf[i]!.map((j, k) => ({ hit: { ...heads[i]![j]!, rerankProbability: p[k]! }, score: weight * p[k]! + (1 - weight) * w.scores[j]! }));
    scored.sort((a, b) => b.score - a.score || a.hit.conceptIndex - b.hit.conceptIndex);
    const kept = new Set(scoredOf[i]);
    const rest = w.hits.flatMap((hit, j) => (kept.has(j) ? [] : [{ hit, score: w.scores[j]! }]));
    const floor = scored.length > 0 ? scored[scored.length - 1]!.score : 0;
    w.hits = [...scored.map((h) => h.hit), ...rest.map((h) => h.hit)];
    // Unscored candidates keep their retrieval order below the reranked ones.
    w.scores = [...scored.map((h) => h.score), ...rest.map((h) => Math.min(floor, h.score))];
    w.reranked = true;
  });
}
