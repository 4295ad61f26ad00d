// Mention-like spans in a note that nobody annotated, for distillation queries in context
// (bench/context-distill-pairs.ts --span-queries): the teacher labels them, so they need no gold.
// A span ends on a word that ends annotated mentions ("... syndrome", "... cancer") and reaches
// back up to three words without crossing punctuation or starting on a function word; an
// upper-case token that is itself annotated somewhere ("DM", "APC": abbreviations, whose sense the
// note decides) is a span alone wherever it is not annotated. Heads and abbreviations come from
// the annotations of the notes given (the learn part: the tune part is never read).
import type { MentionInput, NoteInput } from '../src/link/types.ts';

const FUNCTION_WORDS = new Set(
  'a an the of in on at to for by with and or but nor as is are was were be been being that this these those its their his her our which who whom whose from into than then also not no'.split(' '),
);
const WORD = /[A-Za-z0-9][A-Za-z0-9'-]*/g;
const ABBREVIATION = /^(?=(?:[^A-Z]*[A-Z]){2})[A-Z][A-Za-z0-9-]{1,7}$/;

export interface SpanVocabulary {
  /** Lower-cased last words that end at least `minMentions` annotated mentions (alphabetic, 3+ letters, no function word). */
  heads: Set<string>;
  /** Annotated mentions that are one upper-case token. */
  abbreviations: Set<string>;
}

export function spanVocabulary(notes: readonly NoteInput[], minMentions = 2): SpanVocabulary {
  const counts = new Map<string, number>();
  const abbreviations = new Set<string>();
  for (const { text } of notes.flatMap((n) => n.mentions)) {
    if (ABBREVIATION.test(text)) abbreviations.add(text);
    const last = /([A-Za-z][A-Za-z'-]*)\W*$/.exec(text)?.[1]?.toLowerCase();
    if (last && last.length >= 3 && !FUNCTION_WORDS.has(last)) counts.set(last, (counts.get(last) ?? 0) + 1);
  }
  return { heads: new Set([...counts].filter(([, n]) => n >= minMentions).map(([w]) => w)), abbreviations };
}

/** The note's mention-like spans that no given mention covers exactly (ids `s<start>-<end>`), in text order. */
export function unannotatedSpans(note: NoteInput, { heads, abbreviations }: SpanVocabulary, label: string): MentionInput[] {
  const words = [...note.text.matchAll(WORD)].map((m) => ({ start: m.index, end: m.index + m[0].length, lower: m[0].toLowerCase(), text: m[0] }));
  const taken = new Set(note.mentions.map((m) => `${m.start}-${m.end}`));
  const spans = new Map<string, MentionInput>();
  const add = (start: number, end: number) => {
    const key = `${start}-${end}`;
    if (!taken.has(key) && !spans.has(key)) spans.set(key, { id: `s${key}`, start, end, text: note.text.slice(start, end), label });
  };
  words.forEach((w, i) => {
    if (abbreviations.has(w.text)) add(w.start, w.end);
    if (!heads.has(w.lower)) return;
    for (let j = i; j >= Math.max(0, i - 3); j--) {
      // Only spaces (or a hyphen's own characters) between the words: no span crosses punctuation.
      if (j < i && !/^[ -]+$/.test(note.text.slice(words[j]!.end, words[j + 1]!.start))) break;
      if (!FUNCTION_WORDS.has(words[j]!.lower)) add(words[j]!.start, w.end);
    }
  });
  return [...spans.values()].sort((a, b) => a.start - b.start || a.end - b.end);
}
