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

/** How the paper's findBestLongForm reads the text before a short form (LongFormScan, NoteIndex). */
interface LongFormText {
  /**
   * The last position at or before `at`, and not before the window, whose lower-cased unit is `c`
   * (a letter or digit), at a word start when `initial`; -1 when there is none.
   */
  lastMatch(c: string, at: number, initial: boolean): number;
  /** The position after the last whitespace at or before `at`, or the window's start. */
  wordStart(at: number): number;
}

/** Where the best long form ending before `end` starts, or -1 (the paper's findBestLongForm). */
function bestLongFormStart(shortForm: string, end: number, text: LongFormText): number {
  let l = end - 1;
  for (let s = shortForm.length - 1; s >= 0; s--) {
    const c = lowerUnit(shortForm[s]!);
    if (!/[\p{L}\p{N}]/u.test(c)) continue;
    l = text.lastMatch(c, l, s === 0);
    if (l < 0) return -1;
    l--;
  }
  // The long form starts after the last whitespace before its first letter: a newline or a tab
  // ends a clinical note's field as a space ends a word ("History:\nchronic kidney disease (CKD)").
  return text.wordStart(l);
}

/** LongFormText read back from the end, a unit at a time, down to the window's start `from`. */
class LongFormScan implements LongFormText {
  constructor(
    private readonly text: string,
    private readonly from: number,
  ) {}

  lastMatch(c: string, at: number, initial: boolean): number {
    const { text, from } = this;
    while (at >= from && (lowerUnit(text[at]!) !== c || (initial && at > from && /[\p{L}\p{N}]/u.test(text[at - 1]!)))) at--;
    return at >= from ? at : -1;
  }

  wordStart(at: number): number {
    while (at >= this.from && !/\s/u.test(this.text[at]!)) at--;
    return at + 1;
  }
}

/**
 * Fallback for short forms whose letters are not all in long-form order ("Norrie disease (NDP)",
 * "X-linked adrenoleukodystrophy (ALD)"): the longest run of the last words whose initials are,
 * in order, a subsequence of the short form that starts with its first letter and covers at
 * least two letters. `words`: where the window's words (from their first letter or digit) start in
 * `text`, in order. Returns the position in `text`, or -1.
 */
function initialsLongFormStart(shortForm: string, text: string, words: readonly number[]): number {
  const letters = shortForm.toLowerCase().replace(/[^\p{L}]/gu, '');
  if (letters.length < 2) return -1;
  let best = -1;
  for (let n = 2; n <= Math.min(words.length, letters.length); n++) {
    const run = words.slice(-n);
    if (text[run[0]!]!.toLowerCase() !== letters[0]) continue;
    let s = 0;
    for (const w of run) {
      const initial = text[w]!.toLowerCase();
      const at = letters.indexOf(initial, s);
      if (at < 0) {
        s = -1;
        break;
      }
      s = at + 1;
    }
    if (s > 0) best = run[0]!;
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
  return bestLongFormStart(shortForm, candidate.length, new LongFormScan(candidate, 0)) === 0;
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
 * Windows up to this many units are read as they are, a unit at a time; a longer one (words of
 * hundreds of characters) from the NoteIndex. Reading every window whole made a note of long words
 * quadratic in its length, as did reading all the text before each parenthesis.
 */
const SCAN_LIMIT = 256;

/**
 * Where the window, the last `maxWords` words after `sentenceStart` (the first cut there), starts;
 * undefined when it may start more than SCAN_LIMIT units back from `end`.
 */
function scanWindowStart(text: string, sentenceStart: number, end: number, maxWords: number): number | undefined {
  const from = Math.max(sentenceStart, end - SCAN_LIMIT);
  const words = [...text.slice(from, end).matchAll(/\S+/g)];
  // The first word read may go on before `from`; a later one starts after whitespace.
  if (from > sentenceStart && words.length <= maxWords) return undefined;
  return from + words[Math.max(0, words.length - maxWords)]!.index!;
}

/** Where the long form of `shortForm` in the window [windowStart, end) starts, read a unit at a time; -1 when none. */
function scannedLongFormStart(text: string, shortForm: string, windowStart: number, end: number, initials: boolean): number {
  const start = bestLongFormStart(shortForm, end, new LongFormScan(text, windowStart));
  if (start >= 0 || !initials) return start;
  const words = [...text.slice(windowStart, end).matchAll(/[\p{L}\p{N}][^\s]*/gu)].map((m) => windowStart + m.index!);
  return initialsLongFormStart(shortForm, text, words);
}

/** Positions of `sorted` at or before `at`: the last one's index, or -1. */
function lastAtOrBefore(sorted: readonly number[], at: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= at) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

const isAlnum = (ch: string): boolean => /[\p{L}\p{N}]/u.test(ch);

/**
 * The note read once, for windows past SCAN_LIMIT: its words (runs of non-whitespace), where each
 * lower-cased unit occurs (and where at a word start), and where the next letter or digit is.
 * Such a window then costs about its short form's length times log n, not its own length.
 */
class NoteIndex implements LongFormText {
  private readonly wordStarts: number[] = [];
  private readonly wordEnds: number[] = [];
  /** Positions by lower-cased unit; `initials`: those at a word start (no letter or digit before). */
  private readonly units = new Map<string, number[]>();
  private readonly initials = new Map<string, number[]>();
  private nextAlnum: Int32Array | undefined;
  /** The window's start. */
  private from = 0;

  constructor(private readonly text: string) {
    for (const m of text.matchAll(/\S+/g)) {
      this.wordStarts.push(m.index!);
      this.wordEnds.push(m.index! + m[0].length);
    }
    for (let i = 0; i < text.length; i++) {
      const c = lowerUnit(text[i]!);
      push(this.units, c, i);
      if (i === 0 || !isAlnum(text[i - 1]!)) push(this.initials, c, i);
    }
  }

  /** As scannedLongFormStart, for the window of the last `maxWords` words after `sentenceStart` before `end`. */
  longFormStart(shortForm: string, sentenceStart: number, end: number, maxWords: number, initials: boolean): number {
    const last = lastAtOrBefore(this.wordStarts, end - 1);
    let first = last;
    while (first > 0 && last - first + 1 < maxWords && this.wordEnds[first - 1]! > sentenceStart) first--;
    this.from = Math.max(this.wordStarts[first]!, sentenceStart);
    const start = bestLongFormStart(shortForm, end, this);
    if (start >= 0 || !initials) return start;
    const words: number[] = [];
    for (let w = first; w <= last; w++) {
      const at = this.firstAlnum(Math.max(this.wordStarts[w]!, this.from));
      if (at < Math.min(this.wordEnds[w]!, end)) words.push(at);
    }
    return initialsLongFormStart(shortForm, this.text, words);
  }

  lastMatch(c: string, at: number, initial: boolean): number {
    // A window starts after whitespace, '(', ')' or '.', or at 0: its first unit is at a word start.
    const positions = (initial ? this.initials : this.units).get(c) ?? [];
    const p = positions[lastAtOrBefore(positions, at)] ?? -1;
    return p >= this.from ? p : -1;
  }

  wordStart(at: number): number {
    if (at < this.from) return this.from;
    if (/\s/.test(this.text[at]!)) return at + 1;
    return Math.max(this.wordStarts[lastAtOrBefore(this.wordStarts, at)]!, this.from);
  }

  /** Where the first letter or digit (a code point) at or after `at` is; the text's length when none. */
  private firstAlnum(at: number): number {
    if (this.nextAlnum === undefined) {
      const text = this.text;
      const alnum = new Uint8Array(text.length);
      for (let i = 0; i < text.length; i++) {
        const cp = text.codePointAt(i)!;
        alnum[i] = isAlnum(String.fromCodePoint(cp)) ? 1 : 0;
        if (cp > 0xffff) i++;
      }
      this.nextAlnum = new Int32Array(text.length + 1).fill(text.length);
      for (let i = text.length - 1; i >= 0; i--) this.nextAlnum[i] = alnum[i] === 1 ? i : this.nextAlnum[i + 1]!;
    }
    return this.nextAlnum[at]!;
  }
}

function push(map: Map<string, number[]>, key: string, value: number): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/**
 * Every `long form (SF)` definition in the text, in order of appearance. `initials` also accepts
 * long forms whose word initials, not all letters, follow the short form (see above).
 */
export function findAbbreviationDefinitions(text: string, options: { initials?: boolean } = {}): AbbreviationDefinition[] {
  const found: AbbreviationDefinition[] = [];
  const boundaries = new LongFormBoundaries(text);
  let index: NoteIndex | undefined;
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
    const windowStart = scanWindowStart(text, sentenceStart, end, maxWords);
    const initials = options.initials === true;
    const start = windowStart !== undefined ? scannedLongFormStart(text, inner, windowStart, end, initials) : (index ??= new NoteIndex(text)).longFormStart(inner, sentenceStart, end, maxWords, initials);
    if (start < 0) continue;
    const longForm = text.slice(start, end).trim();
    // Lower-casing never shortens a string and at most doubles it (İ → i̇): see abbreviations.test.ts.
    if (longForm.length <= inner.length || (longForm.length <= 2 * inner.length && longForm.toLowerCase() === inner.toLowerCase())) continue;
    found.push({ shortForm: inner, longForm, shortFormStart, longFormStart: start, longFormEnd: start + longForm.length });
  }
  return found;
}
