/** A tiny deterministic PRNG (Numerical Recipes LCG), uniform in [0, 1): seeded samples for fitting tests. */
export function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 4294967296;
  };
}
