import type { ConceptStore } from '../kb/concept-store.ts';
import type { Hierarchy } from '../kb/hierarchy.ts';
import type { NoteInput } from '../link/types.ts';
import { normalizeName } from '../text/normalize.ts';
import { readLines } from '../kb/line-reader.ts';
import { ParseError } from '../kb/errors.ts';
import { mentionKey } from './gold.ts';
import type { ScoredMention } from './metrics/mention-record.ts';
import { isObject, parseJsonSafely } from '../kb/safe-json.ts';

/**
 * Why a mention was missed, guessed from its text, the gold and the prediction. The guess is a
 * triage aid for the next person (which fix would help most), not a metric: the first rule that
 * applies wins, in the order of the union type.
 */
export const ERROR_CLASSES = ['nil', 'composite', 'abbreviation', 'hierarchy', 'synonym', 'other'] as const;
export type ErrorClass = (typeof ERROR_CLASSES)[number];

export interface MissRecord {
  noteId: string;
  mentionId: string;
  /** The mention as written (PHI on real notes: the file is an offline triage artefact). */
  text: string;
  label: string;
  gold: { id: string; name: string | null }[];
  predicted: { id: string; name: string | null } | null;
  /** 1-based rank of the first gold concept among the candidates; null when absent. */
  goldRank: number | null;
  /** Path length top prediction → nearest gold (1 parent/child, 2 sibling/grandparent), null when unrelated. */
  hierarchyDistance: number | null;
  errorClass: ErrorClass;
}

const COMPOSITE = /\b(and|or|and\/or)\b|\/|,|\bto\b.*-linked/i;
/** A token with two or more capitals or a digit-letter mix, e.g. "DM", "HNPCC", "C7", "DMD". */
const SHORT_FORM = /(^|[\s(-])(?=[A-Za-z0-9]*[A-Z][A-Za-z0-9]*[A-Z0-9])[A-Za-z0-9]{2,8}(?=$|[\s),-])/;

function isAbbreviationLike(text: string): boolean {
  return text.split(/\s+/).some((token) => token.length >= 2 && token.length <= 8 && SHORT_FORM.test(` ${token} `) && token !== token.toLowerCase() && token.replace(/[^A-Z]/g, '').length >= 2);
}

/** Classifies one miss (`scored.scores.hit1` false). */
export function classifyMiss(text: string, scored: ScoredMention, store: ConceptStore, hierarchy: Hierarchy): { errorClass: ErrorClass; hierarchyDistance: number | null } {
  const top = scored.predicted[0];
  let distance: number | null = null;
  if (top !== undefined) {
    for (const g of scored.goldIds) {
      const goldId = store.resolveId(g);
      if (goldId === undefined) continue;
      const d = hierarchy.pathLength(top, goldId);
      if (Number.isFinite(d) && (distance === null || d < distance)) distance = d;
    }
  }
  if (scored.scores.goldNil) return { errorClass: 'nil', hierarchyDistance: distance };
  if (scored.goldIds.length > 1 || COMPOSITE.test(text)) return { errorClass: 'composite', hierarchyDistance: distance };
  if (isAbbreviationLike(text)) return { errorClass: 'abbreviation', hierarchyDistance: distance };
  if (distance !== null && distance <= 2) return { errorClass: 'hierarchy', hierarchyDistance: distance };
  const key = normalizeName(text);
  const goldNames = scored.goldIds.flatMap((g) => {
    const c = store.get(g);
    return c ? [c.name, ...c.synonyms].map(normalizeName) : [];
  });
  if (!goldNames.includes(key)) return { errorClass: 'synonym', hierarchyDistance: distance };
  return { errorClass: 'other', hierarchyDistance: distance };
}

/** The misses of an evaluation (top-1 wrong, gold NIL included), with their class guesses. */
export function collectMisses(notes: readonly NoteInput[], scored: readonly ScoredMention[], store: ConceptStore, hierarchy: Hierarchy): MissRecord[] {
  const textOf = new Map<string, string>();
  for (const note of notes) for (const m of note.mentions) textOf.set(mentionKey(note.noteId, m.id), m.text);
  const nameOf = (id: string) => store.get(id)?.name ?? null;
  const out: MissRecord[] = [];
  for (const s of scored) {
    const correctNil = s.scores.goldNil && s.scores.predictedNil;
    if (s.scores.hit1 || correctNil) continue;
    const text = textOf.get(mentionKey(s.noteId, s.mentionId)) ?? '';
    const rank = s.scores.reciprocalRank > 0 ? Math.round(1 / s.scores.reciprocalRank) : null;
    const top = s.nil ? undefined : s.predicted[0];
    const { errorClass, hierarchyDistance } = classifyMiss(text, s, store, hierarchy);
    out.push({
      noteId: s.noteId,
      mentionId: s.mentionId,
      text,
      label: s.label,
      gold: s.goldIds.map((id) => ({ id, name: nameOf(id) })),
      predicted: top === undefined ? null : { id: top, name: nameOf(top) },
      goldRank: rank,
      hierarchyDistance,
      errorClass,
    });
  }
  return out;
}

/** Counts per class, largest first, with how many have gold in the top 5. */
export function summarizeMisses(misses: readonly MissRecord[]): { errorClass: ErrorClass; count: number; goldInTop5: number }[] {
  const counts = new Map<ErrorClass, { count: number; goldInTop5: number }>();
  for (const m of misses) {
    const c = counts.get(m.errorClass) ?? { count: 0, goldInTop5: 0 };
    c.count++;
    if (m.goldRank !== null && m.goldRank <= 5) c.goldInTop5++;
    counts.set(m.errorClass, c);
  }
  return [...counts.entries()].map(([errorClass, c]) => ({ errorClass, ...c })).sort((a, b) => b.count - a.count || a.errorClass.localeCompare(b.errorClass));
}

/** Per error class, the misses of A that B gets right (`fixed`, A's class) and B's new misses (`broken`, B's class). */
export function missChanges(a: readonly Pick<MissRecord, 'noteId' | 'mentionId' | 'errorClass'>[], b: readonly Pick<MissRecord, 'noteId' | 'mentionId' | 'errorClass'>[]): { errorClass: ErrorClass; fixed: number; broken: number; stillMissed: number }[] {
  const keyOf = (m: Pick<MissRecord, 'noteId' | 'mentionId'>) => mentionKey(m.noteId, m.mentionId);
  const inB = new Set(b.map(keyOf));
  const inA = new Set(a.map(keyOf));
  const rows = new Map<ErrorClass, { fixed: number; broken: number; stillMissed: number }>();
  const row = (c: ErrorClass) => rows.get(c) ?? rows.set(c, { fixed: 0, broken: 0, stillMissed: 0 }).get(c)!;
  for (const m of a) {
    if (inB.has(keyOf(m))) row(m.errorClass).stillMissed++;
    else row(m.errorClass).fixed++;
  }
  for (const m of b) if (!inA.has(keyOf(m))) row(m.errorClass).broken++;
  return [...rows.entries()].map(([errorClass, r]) => ({ errorClass, ...r })).sort((x, y) => y.fixed + y.broken - (x.fixed + x.broken) || x.errorClass.localeCompare(y.errorClass));
}

/** The misses `cuilink eval --errors` wrote (one JSON object per line), checked for what `missChanges` reads. */
export async function readMisses(file: string): Promise<MissRecord[]> {
  const out: MissRecord[] = [];
  for await (const line of readLines(file)) {
    if (line.text.trim() === '') continue;
    // The reason never quotes the line: misses hold mention text.
    const parsed = parseJsonSafely(line.text);
    if ('reason' in parsed) throw new ParseError(file, line.number, `${parsed.reason} (a 'cuilink eval --errors' line?)`);
    if (!isObject(parsed.value)) throw new ParseError(file, line.number, "not a JSON object (a 'cuilink eval --errors' line?)");
    const value = parsed.value as Partial<MissRecord>;
    if (typeof value.noteId !== 'string' || typeof value.mentionId !== 'string') throw new ParseError(file, line.number, "'noteId' and 'mentionId' must be strings");
    if (!(ERROR_CLASSES as readonly unknown[]).includes(value.errorClass)) throw new ParseError(file, line.number, `'errorClass' must be one of ${ERROR_CLASSES.join(', ')}`);
    out.push(value as MissRecord);
  }
  return out;
}
