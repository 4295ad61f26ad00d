import { normalizeName } from './normalize.ts';

/**
 * A looser key than normalizeName for the second-chance name lookup: morphology and word order
 * that do not change which concept a name denotes. "Anemia, Hemolytic, Congenital" =
 * "congenital hemolytic anaemia"; "deficiency of C3" = "C3 deficiency"; "Type II" = "type 2";
 * "tumours" = "tumor"; "α-thalassemia" = "alpha thalassemia"; "inherited disorders" = "hereditary
 * disease". Used only when the strict key finds nothing, so it can afford to conflate a little more.
 */

const GREEK: Record<string, string> = {
  α: 'alpha', β: 'beta', γ: 'gamma', δ: 'delta', ε: 'epsilon', κ: 'kappa', λ: 'lambda', μ: 'mu', ω: 'omega',
};
const ROMAN: Record<string, string> = {
  i: '1', ii: '2', iii: '3', iv: '4', v: '5', vi: '6', vii: '7', viii: '8', ix: '9', x: '10', xi: '11', xii: '12',
};
/** Words a lone-letter numeral follows: "type I", "factor V", "factor X" (never "X-linked", "I-cell"). */
const NUMBERED = new Set(['type', 'grade', 'factor', 'class', 'stage', 'group', 'phase', 'subtype', 'form', 'complex']);
/** Words that carry no concept information in a name (word order is dropped anyway). */
const STOP = new Set(['of', 'the', 'in', 'with', 'a', 'an', 'due', 'to', 'for', 'on', 'by', 'and', 'or']);
/** Prefixes that corpora write fused, spaced or hyphenated ("non-syndromic" = "nonsyndromic"). */
const PREFIXES = new Set(['non', 'anti', 'pre', 'post', 'hyper', 'hypo', 'neuro', 'auto', 'poly', 'multi', 'para', 'peri', 'pseudo', 'sub', 'intra', 'inter']);

/**
 * Words a name can swap without naming another concept: "inherited disorder" is MeSH's
 * "Hereditary Disease". Chosen on the tune split (+2 mentions there, +11 on all of NCBI-disease
 * train, none lost); "syndrome", "genetic" and "abnormality" as "disease"/"hereditary" gained nothing.
 */
const EQUIVALENT_WORDS: Record<string, string> = { disorder: 'disease', inherited: 'hereditary' };

/** Singular of a plural word; short words and Latin/Greek endings are left alone. */
function singular(word: string): string {
  if (word.length <= 4 || /(ss|us|is|ys|as)$/.test(word)) return word;
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (/(ch|sh|x)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith('s')) return word.slice(0, -1);
  return word;
}

/** British → American spelling of the digraphs medical text varies on ("haem", "oesophag", "tumour"). */
function americanize(word: string): string {
  return word.replace(/ae/g, 'e').replace(/^oe/, 'e').replace(/([^aeiou])oe/g, '$1e').replace(/our$/, 'or');
}

/** Tokens of the loose key, in sorted order. */
export function looseTokens(text: string): string[] {
  const greekSpelled = text.replace(/[αβγδεκλμω]/g, (c) => ` ${GREEK[c]} `);
  const tokens = normalizeName(greekSpelled)
    .split(' ')
    .filter((t) => t.length > 0);
  const out: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    let t = tokens[i]!;
    if (PREFIXES.has(t) && i + 1 < tokens.length) t = `${t}${tokens[++i]!}`;
    if (STOP.has(t)) continue;
    const roman = ROMAN[t];
    // "II", "IV" read as numbers wherever they stand; a lone letter only after a word that numbers
    // ("type I"), so "X-linked ichthyosis" and "Ichthyosis, X-Linked" keep the same key in either order.
    if (roman !== undefined && (t.length > 1 || tokens.length === 1 || NUMBERED.has(tokens[i - 1] ?? ''))) t = roman;
    t = americanize(singular(t));
    out.push(EQUIVALENT_WORDS[t] ?? t);
  }
  return out.sort();
}

export function looseKey(text: string): string {
  return looseTokens(text).join(' ');
}

/**
 * Words that qualify a concept's name without changing what it is about ("Hereditary Breast and
 * Ovarian Cancer Syndrome" is about breast and ovarian cancer). Chosen on the tune split.
 */
const QUALIFIER_WORDS = new Set(['hereditary', 'familial', 'syndrome', 'congenital']);

/** The loose key without qualifier words: a name and a mention that differ only by them share it. */
export function unqualifiedKey(text: string): string {
  return looseTokens(text)
    .filter((t) => !QUALIFIER_WORDS.has(t))
    .join(' ');
}

/**
 * A mode of inheritance ("autosomal recessive", "dominantly inherited") says the disease is
 * hereditary and nothing more: "autosomal recessive disorder" is MeSH's "Hereditary Diseases".
 * Chosen on the tune split: "X-linked" is not one of them (it lost mentions there).
 */
const INHERITANCE_MODE = /\b(?:autosomal[\s-]+)?(?:recessive|dominant)(?:ly)?(?:[\s-]+inherited)?\b/gi;

/** The text with its modes of inheritance written as "hereditary", or undefined when it names none. */
export function hereditaryReading(text: string): string | undefined {
  const reading = text.replace(INHERITANCE_MODE, 'hereditary');
  return reading === text ? undefined : reading;
}
