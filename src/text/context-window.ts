/** How a model wants its mention query built (the `query` block of a model manifest). */
export interface QuerySpec {
  mode: 'mention' | 'context';
  /** Placed around the mention in context mode. */
  markers: readonly [string, string];
  /** Characters of note text kept on each side of the mention in context mode. */
  contextChars: number;
}

/** Whole words only: a window that starts or ends inside a word drops the partial word. */
function leftContext(text: string, start: number, chars: number): string {
  const from = Math.max(0, start - chars);
  let left = text.slice(from, start);
  if (from > 0 && /\S/.test(text[from - 1]!)) left = left.replace(/^\S*/, '');
  return left.replace(/\s+/g, ' ').trimStart();
}

function rightContext(text: string, end: number, chars: number): string {
  const to = Math.min(text.length, end + chars);
  let right = text.slice(end, to);
  if (to < text.length && /\S/.test(text[to]!)) right = right.replace(/\S*$/, '');
  return right.replace(/\s+/g, ' ').trimEnd();
}

/**
 * The text an encoder sees for a mention: the mention alone, or the mention between markers
 * inside its context window. `mentionText` replaces the covered text (an expanded abbreviation).
 */
export function buildQuery(noteText: string, mention: { start: number; end: number; text: string }, spec: QuerySpec, mentionText?: string): string {
  const surface = (mentionText ?? mention.text).replace(/\s+/g, ' ').trim();
  if (spec.mode === 'mention') return surface;
  const left = leftContext(noteText, mention.start, spec.contextChars);
  const right = rightContext(noteText, mention.end, spec.contextChars);
  const [open, close] = spec.markers;
  return `${left}${left && !left.endsWith(' ') ? ' ' : ''}${open} ${surface} ${close}${right && !right.startsWith(' ') ? ' ' : ''}${right}`.trim();
}
