/**
 * Which of a mention's reranked candidates can still end up first. The final score is
 * w·p + (1-w)·r with the cross-encoder's probability p in [0, 1] and the retrieval score r, so a
 * candidate whose best case w + (1-w)·r_j is below the best-retrieved candidate's worst case
 * (1-w)·r_max can never win: it is not worth a cross-encoder run. With pair scores that do not
 * depend on each other (each pair in its own model batch) the top-1 is exactly the one scoring
 * all candidates would give; only the order of the candidates after it can differ.
 */
export function candidatesThatCanWin(retrievalScores: readonly number[], weight: number): number[] {
  if (retrievalScores.length === 0) return [];
  const best = Math.max(...retrievalScores);
  // Strict with a margin: equality would leave the winner to the tie-break on concept order.
  const reach = weight + 1e-9;
  return retrievalScores.flatMap((r, i) => ((1 - weight) * (best - r) <= reach ? [i] : []));
}
