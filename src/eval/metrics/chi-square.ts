/**
 * Upper tail of the χ² distribution, for the analytic calibration test (calibration-test.ts).
 * P(χ²(df) ≥ x) = Q(df / 2, x / 2), Q the regularized upper incomplete gamma function, computed
 * as in Numerical Recipes (§6.2): the series for P below x < a + 1, where it converges fast and
 * Q = 1 − P loses nothing that matters (Q is large there), and Lentz's continued fraction for Q
 * above, where the series would need many terms and 1 − P would cancel to 0 on a small tail.
 */

const MAX_ITERATIONS = 1000;
const EPSILON = 3e-16;
const TINY = 1e-300;

// Lanczos (g = 7, n = 9): relative error about 1e-15 for a > 0, more than the tests ask.
const LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];

/** ln Γ(a) for a > 0. */
export function logGamma(a: number): number {
  if (a < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * a)) - logGamma(1 - a);
  const z = a - 1;
  let sum = LANCZOS[0]!;
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i]! / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** P(a, x) by its series Σ x^n / (a (a+1) … (a+n)), times e^−x x^a / Γ(a). */
function lowerSeries(a: number, x: number): number {
  let term = 1 / a;
  let sum = term;
  for (let n = 1; n < MAX_ITERATIONS; n++) {
    term *= x / (a + n);
    sum += term;
    if (Math.abs(term) < Math.abs(sum) * EPSILON) break;
  }
  return sum * Math.exp(-x + a * Math.log(x) - logGamma(a));
}

/** Q(a, x) by its continued fraction (modified Lentz). */
function upperContinuedFraction(a: number, x: number): number {
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < MAX_ITERATIONS; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < EPSILON) break;
  }
  return Math.exp(-x + a * Math.log(x) - logGamma(a)) * h;
}

/** Q(a, x) = Γ(a, x) / Γ(a), for a > 0 and x ≥ 0. */
export function regularizedUpperGamma(a: number, x: number): number {
  if (!(a > 0) || !(x >= 0)) throw new RangeError(`regularized gamma needs a > 0 and x ≥ 0, got a ${a}, x ${x}`);
  if (x === 0) return 1;
  if (x === Infinity) return 0;
  if (x < a + 1) return Math.min(1, Math.max(0, 1 - lowerSeries(a, x)));
  return Math.min(1, Math.max(0, upperContinuedFraction(a, x)));
}

/** P(χ²(df) ≥ x): the p-value of a χ² statistic x on df degrees of freedom. */
export function chiSquareUpperTail(x: number, df: number): number {
  if (!(df > 0)) throw new RangeError(`χ² needs df > 0, got ${df}`);
  if (Number.isNaN(x)) throw new RangeError('χ² statistic is NaN');
  return x <= 0 ? 1 : regularizedUpperGamma(df / 2, x / 2);
}
