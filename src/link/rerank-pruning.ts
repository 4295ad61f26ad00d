/**
 * Which of a mention's reranked candidates can still end up first. The final score is
 * w·p + (1-w)·r with the cross-encoder's probability p in [0, 1] and the retrieval score r, so a
 * candidate whose best case w + (1-w)·r_j is below a score some candidate is known to reach can
 * never win: it is not worth a cross-encoder run. With pair scores that do not depend on each
 * other (each pair in its own model batch, or a model whose rows never interact) the top-1 is
 * exactly the one scoring all candidates would give; only the order after it can differ.
 */

/** Strict with a margin: equality would leave the winner to the tie-break on concept order. */
const TIE = 1e-9;

/** Candidates whose best case reaches `floor`, a final score some candidate is known to reach. */
export function candidatesThatCanReach(retrievalScores: readonly number[], weight: number, floor: number): number[] {
  return retrievalScores.flatMap((r, i) => (weight + (1 - weight) * r >= floor - TIE ? [i] : []));
}

/** Before any pair is scored: the best-retrieved candidate reaches at least (1-w)·r_max. */
export function candidatesThatCanWin(retrievalScores: readonly number[], weight: number): number[] {
  if (retrievalScores.length === 0) return [];
  return candidatesThatCanReach(retrievalScores, weight, (1 - weight) * Math.max(...retrievalScores));
}

/** The best-retrieved candidate (first on ties): scored first, its final score bounds the rest. */
export function retrievalLeader(retrievalScores: readonly number[]): number {
  let best = 0;
  retrievalScores.forEach((r, i) => {
    if (r > retrievalScores[best]!) best = i;
  });
  return best;
}

/**
 * The unscored candidate to score next (the best-retrieved one whose best case still reaches
 * `best`, the highest final score found so far), or undefined when none can win any more.
 */
export function nextContender(retrievalScores: readonly number[], weight: number, best: number, scored: readonly number[]): number | undefined {
  let next: number | undefined;
  retrievalScores.forEach((r, i) => {
    if (scored.includes(i) || weight + (1 - weight) * r < best - TIE) return;
    if (next === undefined || r > retrievalScores[next]!) next = i;
  });
  return next;
}
