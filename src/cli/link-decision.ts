import type { LinkedMention } from '../link/types.ts';

/**
 * One phrase for the demo and `cuilink link` readers, read off the LinkedMention fields: `NIL`
 * when there is no link (with the confidence that sent it there), else the stage that chose the
 * concept (`via`: exact, abbreviation, loose, xref, …, dense, memory), with `, reranked` when the
 * cross-encoder rescored the list.
 */
export function describeDecision(mention: LinkedMention): string {
  if (mention.nil || mention.conceptId === null) return mention.confidence === null ? 'NIL' : `NIL (confidence ${mention.confidence.toFixed(2)})`;
  const via = mention.via ?? 'unknown';
  return mention.reranked ? `${via}, reranked` : via;
}
