import type { LinkedMention } from '../link/types.ts';

/** How the linker ranked a mention's concept, read off the LinkedMention fields it already carries. */
export type RankPath = 'exact' | 'reranked' | 'dense';

/**
 * The path that put the chosen concept first: `reranked` when the cross-encoder rescored the list
 * (which happens only when retrieval left it ambiguous), else `exact` when the chosen candidate
 * came from the exact normalized-name table, else `dense` (the bi-encoder's HNSW score alone).
 */
export function rankPath(mention: LinkedMention): RankPath {
  if (mention.reranked) return 'reranked';
  const chosen = mention.candidates.find((c) => c.conceptId === mention.conceptId) ?? mention.candidates[0];
  return chosen?.exact === true ? 'exact' : 'dense';
}

/**
 * One word (or two) for the demo and `cuilink link` readers: `NIL` when no candidate cleared the
 * threshold, `abbreviation (<path>)` for an in-note short form linked through its long form,
 * else the rank path.
 */
export function describeDecision(mention: LinkedMention): string {
  if (mention.nil || mention.conceptId === null) return 'NIL';
  if (mention.expandedFrom) return `abbreviation (${rankPath(mention)})`;
  return rankPath(mention);
}
