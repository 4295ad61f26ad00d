import type { LinkedMention } from '../link/types.ts';

/**
 * One phrase for the demo and `cuilink link` readers, read off the LinkedMention fields: `NIL`
 * when there is no link (with the probabilities that sent it there: P(in KB), confidence), else the stage that chose the
 * concept (`via`: exact, abbreviation, loose, xref, …, dense, memory), with `, reranked` when the
 * cross-encoder rescored the list.
 */
export function describeDecision(mention: LinkedMention): string {
  if (mention.nil || mention.conceptId === null) {
    const inKb = mention.inKb == null ? '' : `P(in KB) ${mention.inKb.toFixed(2)}`;
    const confidence = mention.confidence === null ? '' : `confidence ${mention.confidence.toFixed(2)}`;
    return inKb || confidence ? `NIL (${[inKb, confidence].filter(Boolean).join(', ')})` : 'NIL';
  }
  const via = mention.via ?? 'unknown';
  return mention.reranked ? `${via}, reranked` : via;
}
