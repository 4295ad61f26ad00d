/**
 * In-note abbreviation definitions, `long form (SF)`, found with the Schwartz & Hearst (2003)
 * algorithm: the short form's characters are matched right to left inside the words before the
 * parenthesis, the first short-form character at a word start.
 */
export interface AbbreviationDefinition {
  shortForm: string;
  longForm: string;
  shortFormStart: number;
  longFormStart: number;
  /** Exclusive. */
  longFormEnd: number;
}

const MAX_SHORT_FORM_CHARS = 10;

function isShortFormCandidate(candidate: string): boolean {
  if (candidate.length < 2 || candidate.length > MAX_SHORT_FORM_CHARS) return false;
  if (candidate.split(/\s+/).length > 2) return false;
  if (!/\p{L}/u.test(candidate)) return false;
  return /^[\p{L}\p{N}]/u.test(candidate);
}

/**
 * `ch` (one UTF-16 unit) lower-cased to one unit. Lower-casing a whole string can lengthen it
 * ('İ' becomes the two-unit 'i̇'), which would shift every later offset off the original text.
 */
function lowerUnit(ch: string): string {
  return ch.toLowerCase()[0]!;
}

/** Offset in `longForm` where the best long form starts, or -1 (the paper's findBestLongForm). */
function bestLongFormStart(shortForm: string, longForm: string): number {
  let s = shortForm.length - 1;
  let l = longForm.length - 1;
  for (; s >= 0; s--) {
    const c = lowerUnit(shortForm[s]!);
    if (!/[\p{L}\p{N}]/u.test(c)) continue;
    while (l >= 0 && (lowerUnit(longForm[l]!) !== c || (s === 0 && l > 0 && /[\p{L}\p{N}]/u.test(longForm[l - 1]!)))) l--;
    if (l < 0) return -1;
    l--;
  }
  // The long form starts after the last whitespace before its first letter: a newline or a tab
  // ends a clinical note's field as a space ends a word ("History:\nchronic kidney disease (CKD)").
  let start = l;
  while (start >= 0 && !/\s/u.test(longForm[start]!)) start--;
  return start + 1;
}

/**
 * Fallback for short forms whose letters are not all in long-form order ("Norrie disease (NDP)",
 * "X-linked adrenoleukodystrophy (ALD)"): the longest run of the last words whose initials are,
 * in order, a subsequence of the short form that starts with its first letter and covers at
 * least two letters. Returns the offset in `window`, or -1.
 */
function initialsLongFormStart(shortForm: string, window: string): number {
  const letters = shortForm.toLowerCase().replace(/[^\p{L}]/gu, '');
  if (letters.length < 2) return -1;
  const words = [...window.matchAll(/[\p{L}\p{N}][^\s]*/gu)];
  let best = -1;
  for (let n = 2; n <= Math.min(words.length, letters.length); n++) {
    const run = words.slice(-n);
    if (run[0]![0]![0]!.toLowerCase() !== letters[0]) continue;
    let s = 0;
    for (const w of run) {
      const initial = w[0]![0]!.toLowerCase();
      const at = letters.indexOf(initial, s);
      if (at < 0) {
        s = -1;
        break;
      }
      s = at + 1;
    }
    if (s > 0) best = run[0]!.index!;
  }
  return best;
}

/**
 * True when `candidate` reads as the long form of `shortForm` by the Schwartz & Hearst rule with
 * the first short-form letter on the candidate's first word ("PDS" ~ "Pendred syndrome"): how an
 * undefined short form finds its long form among the note's other mentions.
 */
export function isLongFormOf(shortForm: string, candidate: string): boolean {
  if (candidate.length <= shortForm.length || candidate.split(/\s+/).length < 2) return false;
  return bestLongFormStart(shortForm, candidate) === 0;
}

/**
 * True when the initials of the long form's words spell the short form's letters ("AFAP" ~
 * "attenuated familial adenomatous polyposis", "DM" ~ "diabetes mellitus"): a long form that was
 * not cut short, unlike "adenomatous polyposis coli" for "AAPC", whose second A Schwartz & Hearst
 * matched inside a word.
 */
export function initialsSpell(shortForm: string, longForm: string): boolean {
  const letters = foldCase(shortForm).replace(/\P{L}/gu, '');
  // Any dash joins words: "Ehlers–Danlos syndrome" is written with an en dash as often as a hyphen.
  const initials = foldCase(longForm)
    .split(/[\s\p{Pd}/]+/u)
    .map((word) => /\p{L}/u.exec(word)?.[0] ?? '')
    .join('');
  return [...letters].length > 1 && initials === letters;
}

/** Lower case without diacritics, so "Sjögren syndrome" spells SS and "İ" reads as "i". */
function foldCase(text: string): string {
  return text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
}

/**
 * Where a long form ending at `end` may start: after the sentence's start (a '.' followed by a
 * space or a capital: "(DM).Renal failure (RF)"), after a parenthesis still open, or after a ')'
 * that no letter, digit or hyphen continues. A parenthetical glued to the next word is part of the
 * long form: "antibody (ANCA)-associated vasculitis (AAV)", "(TNF)-related apoptosis-inducing
 * ligand (TRAIL)". The nearest such place before `end`, read in one pass over the text for all
 * ends, asked in increasing order: the last '.' or ')' boundary, or the last '(' after it that no
 * glued ')' closed.
 */
class LongFormBoundaries {
  /** Positions before this are read, each with the character after it. */
  private read = 0;
  private readonly marks = /[().]/g;
  private sentence = 0;
  /** After each '(' read since `sentence` and still open, in order. */
  private readonly open: number[] = [];

  constructor(private readonly text: string) {}

  before(end: number): number {
    const text = this.text;
    const marks = this.marks;
    marks.lastIndex = this.read;
    for (let m = marks.exec(text); m !== null && m.index < end - 1; m = marks.exec(text)) {
      const i = m.index;
      const next = text[i + 1]!;
      if (m[0] === ')') {
        // Glued only when the word goes on: "(ANCA)-associated", not "(IRE), called" or "(aku)/Hgd".
        if (/[\p{L}\p{N}-]/u.test(next)) this.open.pop();
        else this.cut(i + 1);
      } else if (m[0] === '(') {
        this.open.push(i + 1);
      } else if (/[\s\p{Lu}]/u.test(next)) {
        this.cut(i + 1);
      }
    }
    this.read = Math.max(this.read, end - 1);
    // The last character has nothing after it in the long form: a ')' there ends no word, a '.' no sentence.
    if (end === 0) return 0;
    if (text[end - 1] === ')' || text[end - 1] === '(') return end;
    return this.open.at(-1) ?? this.sentence;
  }

  private cut(at: number): void {
    this.sentence = at;
    this.open.length = 0;
  }
}

/**
 * A long form is read from at most this many units before its parenthesis (and from a word's
 * start): without a bound, a window of the last words was as long as those words, so a note of
 * long "words" (no whitespace) cost its length per parenthesis, quadratic in all. A long form
 * longer than this is no abbreviation's.
 */
const MAX_LONG_FORM_UNITS = 256;

/**
 * Where the window of a long form ending at `end` starts: the last `maxWords` words after
 * `sentenceStart`, within MAX_LONG_FORM_UNITS units of `end`; undefined when no whole word fits.
 */
function longFormWindowStart(text: string, sentenceStart: number, end: number, maxWords: number): number | undefined {
  const from = Math.max(sentenceStart, end - MAX_LONG_FORM_UNITS);
  const words = [...text.slice(from, end).matchAll(/\S+/g)];
  // A first word that goes on before `from` is not whole: the window starts at the next one.
  const partial = from > sentenceStart && !/\s/.test(text[from - 1]!) && words[0]?.index === 0 ? 1 : 0;
  const first = Math.max(partial, words.length - maxWords);
  return first < words.length ? from + words[first]!.index! : undefined;
}

/**
 * Every `long form (SF)` definition in the text, in order of appearance. `initials` also accepts
 * long forms whose word initials, not all letters, follow the short form (see above).
 */
export function findAbbreviationDefinitions(text: string, options: { initials?: boolean } = {}): AbbreviationDefinition[] {
  const found: AbbreviationDefinition[] = [];
  const boundaries = new LongFormBoundaries(text);
  for (const match of text.matchAll(/\(([^()]{1,40})\)/g)) {
    const open = match.index!;
    // "(SF; other words)" and "(SF, other words)" still define SF.
    const inner = match[1]!.split(/[;,]/)[0]!.trim();
    if (!isShortFormCandidate(inner)) continue;
    const shortFormStart = open + 1 + match[1]!.indexOf(inner);
    // The long form ends before the whitespace before the parenthesis.
    let end = open;
    while (end > 0 && /\s/.test(text[end - 1]!)) end--;
    const sentenceStart = boundaries.before(end);
    if (sentenceStart >= end) continue;
    const maxWords = Math.min(inner.length + 5, inner.length * 2);
    const windowStart = longFormWindowStart(text, sentenceStart, end, maxWords);
    if (windowStart === undefined) continue;
    const window = text.slice(windowStart, end);
    let offset = bestLongFormStart(inner, window);
    if (offset < 0 && options.initials === true) offset = initialsLongFormStart(inner, window);
    if (offset < 0) continue;
    const longForm = window.slice(offset).trim();
    if (longForm.length <= inner.length || longForm.toLowerCase() === inner.toLowerCase()) continue;
    found.push({ shortForm: inner, longForm, shortFormStart, longFormStart: windowStart + offset, longFormEnd: windowStart + offset + longForm.length });
  }
  return found;
}
