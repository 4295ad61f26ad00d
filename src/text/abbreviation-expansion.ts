/**
 * A mention's text with the note's abbreviations written out: the whole mention ("NDP" → "Norrie
 * disease") or a short form inside it ("childhood cerebral ALD" → "childhood cerebral
 * adrenoleukodystrophy"), and short forms inside long forms in turn ("FAP" → "familial APC" →
 * "familial adenomatous polyposis coli"). The linking of a mention stays a function of its
 * expanded text, so a short form gets the concept its own long form gets in the same note.
 */
export interface NoteAbbreviation {
  longForm: string;
  /** Span of the long form in the note: a mention inside it is the definition, not a use. */
  start: number;
  end: number;
}

const MAX_DEPTH = 2;

/**
 * The longest written-out mention, in UTF-16 units: past it the mention is linked as written. A
 * long form is at most 256 units and a mention 512 by default, so no reading of a mention needs
 * more; unbounded, definitions whose long forms are made of other definitions' short forms grew a
 * mention by their product (a note of under 1,500 characters with one mention: more than a string
 * can hold, a RangeError that stopped the stream stage on every restart).
 */
export const MAX_EXPANDED_UNITS = 1024;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Short-form-like mention: one token of capitals and digits ("PDS", "DM1", "vWD"). */
export function looksLikeShortForm(text: string): boolean {
  return /^[\p{L}\p{N}-]{2,8}$/u.test(text) && (text.match(/\p{Lu}/gu)?.length ?? 0) >= 2;
}

/**
 * The expanded text, or undefined when nothing was expanded or the expansion would exceed
 * MAX_EXPANDED_UNITS. `inside` false keeps the old behaviour: only a mention that is exactly a
 * short form is expanded.
 */
export function expandAbbreviations(
  mention: { text: string; start: number; end: number },
  abbreviations: ReadonlyMap<string, NoteAbbreviation>,
  inside: boolean,
): string | undefined {
  const isDefinition = (d: NoteAbbreviation) => mention.start >= d.start && mention.end <= d.end;
  const whole = abbreviations.get(mention.text);
  if (!inside) return whole !== undefined && !isDefinition(whole) ? whole.longForm : undefined;
  if (abbreviations.size === 0) return undefined;
  let text = mention.text;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    let changed = false;
    for (const [shortForm, d] of abbreviations) {
      if (isDefinition(d) || !text.includes(shortForm)) continue;
      // Whole tokens only ("ALD" in "X-ALD" and "cerebral ALD", never inside "ALDH").
      const pattern = new RegExp(`(^|[^\\p{L}\\p{N}])${escapeRegExp(shortForm)}(?=$|[^\\p{L}\\p{N}])`, 'gu');
      const next = text.replace(pattern, (_, lead: string) => `${lead}${d.longForm}`);
      // Checked after every replacement, so that none starts from more than the bound.
      if (next.length > MAX_EXPANDED_UNITS) return undefined;
      if (next !== text) {
        text = next;
        changed = true;
      }
    }
    if (!changed) break;
  }
  return text === mention.text ? undefined : text;
}

/**
 * Long forms for short-form mentions the note never defines, taken from the note's other
 * mentions: "PDS" gets "Pendred syndrome" when that is annotated in the same note. So a short
 * form and its long form link alike even without a `long form (SF)` definition. Two different
 * long forms ("HBP": "high blood pressure", "hepatic blood perfusion") leave the short form as
 * written: which one the note means is a guess, and a guess would follow the mentions' order.
 */
export function longFormsAmongMentions(mentions: readonly { text: string; start?: number }[], isLongFormOf: (shortForm: string, candidate: string) => boolean): Map<string, string> {
  const inTextOrder = [...mentions].sort((a, b) => (a.start ?? 0) - (b.start ?? 0) || (a.text < b.text ? -1 : a.text > b.text ? 1 : 0));
  const out = new Map<string, string>();
  const seen = new Set<string>();
  for (const m of inTextOrder) {
    if (!looksLikeShortForm(m.text) || seen.has(m.text)) continue;
    seen.add(m.text);
    const longs = inTextOrder.filter((other) => other !== m && !looksLikeShortForm(other.text) && isLongFormOf(m.text, other.text));
    if (longs.length > 0 && new Set(longs.map((l) => l.text.toLowerCase())).size === 1) out.set(m.text, longs[0]!.text);
  }
  return out;
}

export interface MentionExpansion {
  text: string;
  /** A short form inside the mention was written out (the mention is more than the short form). */
  partial: boolean;
}

/** What a mention's text becomes: note definitions first, then a long form among the mentions. */
export function expandMention(
  mention: { text: string; start: number; end: number },
  abbreviations: ReadonlyMap<string, NoteAbbreviation>,
  mentionLongForms: ReadonlyMap<string, string>,
  inside: boolean,
): MentionExpansion | undefined {
  const text = expandAbbreviations(mention, abbreviations, inside);
  if (text !== undefined) {
    const whole = abbreviations.get(mention.text);
    return { text, partial: whole === undefined || (mention.start >= whole.start && mention.end <= whole.end) };
  }
  const long = inside ? mentionLongForms.get(mention.text) : undefined;
  return long === undefined ? undefined : { text: long, partial: false };
}
