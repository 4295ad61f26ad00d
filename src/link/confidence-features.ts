import { looksLikeShortForm } from '../text/abbreviation-expansion.ts';
import type { LinkedMention } from './types.ts';

/**
 * What the confidence calibrator reads of one link: only fields the linker already outputs (so a
 * calibration can be fitted from `cuilink eval` output and applied inside the linker alike) and
 * the mention's length and shape (its text never leaves this function).
 *
 * Why these: on held-back corpora true exact matches are 96.5–99% right, the looser name lookups
 * 76–87% and the rest 57–65% (issue 24), so the stage is the first signal; within a stage the
 * similarity of the top-1 name, its lead over the runner-up and whether several names tied say
 * the rest.
 */
export const CONFIDENCE_FEATURES = [
  'via_exact',
  'via_abbreviation',
  'via_loose',
  'via_xref',
  'via_rule',
  'via_composite',
  'via_dense',
  'via_memory',
  'similarity',
  'dense_similarity',
  'lookup_similarity',
  'score',
  'score_margin',
  'similarity_lead',
  'lexical_ties',
  'reranked',
  'memory_support',
  'log_length',
  'words',
  'short_form',
  'name_overlap',
  'dense_overlap',
  'dense_margin',
  'dense_similarity_sq',
  'runner_up_related',
  'note_same_concept',
  'note_same_exact',
  'note_same_surface',
  'synonyms',
  'children',
  'dense_note_same',
  'dense_children',
  // Added 2026-11-26 (evening, docs/confidence.md): how much of the chosen concept's best-fitting
  // name the mention lacks and how alike they are in characters; candidates of the top-1's family.
  // On learn held-out runs scored out of fold they raised held-out-concept NIL F1 0.488 → 0.529
  // (with the pooled NIL rule of src/eval/confidence/held-out-concepts.ts).
  'dense_name_extra',
  'family_candidates',
  'best_name_extra',
  'has_digit',
  'trigram_similarity',
  'best_name_similarity',
] as const;

export type ConfidenceFeatureName = (typeof CONFIDENCE_FEATURES)[number];

const LOOKUP_RULES = new Set(['head-noun', 'inheritance', 'unqualified']);
const LEXICAL = new Set(['exact', 'abbreviation', 'loose', 'xref', 'head-noun', 'inheritance', 'unqualified', 'composite']);

/** What the features read of the KB (ConceptFacts builds it from an index's concepts). */
export interface ConceptFactsView {
  /** Synonyms of a concept (0 for an id the KB lacks). */
  synonyms(id: string): number;
  /** Concepts that name it as a parent. */
  children(id: string): number;
  /** `parent` is a direct parent of `child`. */
  isParent(parent: string, child: string): boolean;
  /** The concept's preferred name and synonyms (none for an id the KB lacks). */
  names(id: string): readonly string[];
}

/** The other mentions of the same note: their top-1 concept, the stage that chose it, their text. */
export interface NoteNeighbours {
  tops: readonly { conceptId: string | undefined; via: string | null; text: string }[];
}

/** A note's mentions as the features see them, and each one's neighbours (all but itself). */
export function noteNeighbours(mentions: readonly { linked: Omit<LinkedMention, 'confidence'>; text: string }[]): NoteNeighbours[] {
  const tops = mentions.map((m) => ({ conceptId: m.linked.candidates[0]?.conceptId, via: m.linked.via, text: m.text }));
  return mentions.map((_, i) => ({ tops: tops.filter((_, j) => j !== i) }));
}

/**
 * The feature vector of a link (without its confidence), in CONFIDENCE_FEATURES order. `facts`
 * and `note` add what the KB says of the chosen concept (how general it is, whether the runner-up
 * is its parent or child) and whether the note's other mentions agree with it; a note's mentions
 * are always linked together, so the stream, the CLI and `cuilink calibrate` see the same context.
 */
export function confidenceFeatures(linked: Omit<LinkedMention, 'confidence'>, mentionText: string, facts?: ConceptFactsView, note?: NoteNeighbours): Float64Array {
  const c = linked.candidates;
  const top = c[0];
  const via = linked.via ?? 'dense';
  const x = new Float64Array(CONFIDENCE_FEATURES.length);
  if (top === undefined) return x;
  const set = (name: ConfidenceFeatureName, value: number) => (x[CONFIDENCE_FEATURES.indexOf(name)] = Number.isFinite(value) ? value : 0);
  set('via_exact', Number(via === 'exact'));
  set('via_abbreviation', Number(via === 'abbreviation'));
  set('via_loose', Number(via === 'loose'));
  set('via_xref', Number(via === 'xref'));
  set('via_rule', Number(LOOKUP_RULES.has(via)));
  set('via_composite', Number(via === 'composite'));
  set('via_dense', Number(via === 'dense' || via === 'inventory'));
  set('via_memory', Number(via === 'memory'));
  const similarity = top.retrievalScore;
  set('similarity', similarity);
  set('dense_similarity', via === 'dense' || via === 'inventory' ? similarity : 0);
  set('lookup_similarity', LEXICAL.has(via) && via !== 'exact' ? similarity : 0);
  set('score', top.score);
  set('score_margin', c.length > 1 ? top.score - c[1]!.score : 1);
  let otherSimilarity = -1;
  for (let i = 1; i < c.length; i++) otherSimilarity = Math.max(otherSimilarity, c[i]!.retrievalScore);
  set('similarity_lead', c.length > 1 ? similarity - otherSimilarity : 1);
  set('lexical_ties', Math.min(3, c.filter((cand) => LEXICAL.has(cand.via)).length - (LEXICAL.has(top.via) ? 1 : 0)));
  set('reranked', Number(linked.reranked));
  set('memory_support', Math.log1p(linked.memorySupport ?? 0));
  set('log_length', Math.log(Math.max(1, mentionText.length)));
  set('words', Math.min(6, mentionText.split(/\s+/).filter((w) => w.length > 0).length));
  set('short_form', Number(looksLikeShortForm(mentionText) || linked.expandedFrom != null));
  const dense = via === 'dense' || via === 'inventory';
  // The mention is split once; KB names come split from nameShapes.
  const mentionPrefixes = prefixWords(mentionText);
  const topWords = nameShapes.of(top.name).words;
  const overlap = mentionPrefixes.length ? mentionPrefixes.filter((w) => topWords.includes(w)).length / mentionPrefixes.length : 0;
  set('name_overlap', overlap);
  set('dense_overlap', dense ? overlap : 0);
  set('dense_margin', dense && c.length > 1 ? top.score - c[1]!.score : 0);
  set('dense_similarity_sq', dense ? similarity * similarity : 0);
  const second = c[1];
  // Without facts the top-1's candidate name stands for all of its names.
  const names = facts ? [top.name, ...facts.names(top.conceptId)] : [top.name];
  const mentionTrigrams = trigrams(mentionText);
  const mentionWords = new Set(mentionPrefixes);
  let bestNameExtra = Infinity;
  let bestNameSimilarity = -Infinity;
  for (const name of names) {
    const shape = nameShapes.of(name);
    bestNameExtra = Math.min(bestNameExtra, shape.words.length ? shape.words.filter((w) => !mentionWords.has(w)).length / shape.words.length : 0);
    bestNameSimilarity = Math.max(bestNameSimilarity, jaccard(mentionTrigrams, shape.trigrams));
  }
  set('best_name_extra', bestNameExtra);
  set('dense_name_extra', dense ? bestNameExtra : 0);
  set('has_digit', Number(/\d/.test(mentionText)));
  set('trigram_similarity', jaccard(mentionTrigrams, nameShapes.of(top.name).trigrams));
  set('best_name_similarity', bestNameSimilarity);
  if (facts) {
    let family = 0;
    for (let i = 1; i < c.length; i++) if (facts.isParent(top.conceptId, c[i]!.conceptId) || facts.isParent(c[i]!.conceptId, top.conceptId)) family++;
    set('family_candidates', Math.log1p(family));
    set('runner_up_related', second ? Number(facts.isParent(top.conceptId, second.conceptId) || facts.isParent(second.conceptId, top.conceptId)) : 0);
    set('synonyms', Math.log1p(facts.synonyms(top.conceptId)));
    set('children', Math.log1p(facts.children(top.conceptId)));
    set('dense_children', dense ? Math.log1p(facts.children(top.conceptId)) : 0);
  }
  if (note) {
    const same = note.tops.filter((o) => o.conceptId === top.conceptId);
    const surface = mentionText.toLowerCase();
    set('note_same_concept', Math.log1p(same.length));
    set('note_same_exact', Math.log1p(same.filter((o) => o.via === 'exact' || o.via === 'abbreviation').length));
    set('note_same_surface', Math.log1p(note.tops.filter((o) => o.text.toLowerCase() === surface).length));
    set('dense_note_same', dense ? Math.log1p(same.length) : 0);
  }
  return x;
}

/** Words of two or more letters, case-folded, cut to their first four letters. */
function prefixWords(text: string): string[] {
  return text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 1).map((w) => w.slice(0, 4));
}

/**
 * KB names' distinct prefix words and trigrams, kept across links: a concept's names are the same
 * every time it is chosen, and splitting them again cost ~70 µs a link (a MEDIC concept has up to
 * 132 synonyms). Bounded: emptied when full, so a long stream holds at most MAX_NAMES
 * (about 25 MB when full; the top-1s of NCBI-disease's learn part touch 9,400 names).
 */
class NameShapes {
  private static readonly MAX_NAMES = 20_000;
  private readonly shapes = new Map<string, { words: string[]; trigrams: Set<string> }>();

  of(name: string): { words: string[]; trigrams: Set<string> } {
    let shape = this.shapes.get(name);
    if (shape === undefined) {
      if (this.shapes.size >= NameShapes.MAX_NAMES) this.shapes.clear();
      shape = { words: [...new Set(prefixWords(name))], trigrams: trigrams(name) };
      this.shapes.set(name, shape);
    }
    return shape;
  }
}

const nameShapes = new NameShapes();

/** Character trigrams of the case-folded text, words joined by one space and padded at both ends. */
function trigrams(text: string): Set<string> {
  const padded = ` ${text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim()} `;
  const out = new Set<string>();
  for (let i = 0; i + 3 <= padded.length; i++) out.add(padded.slice(i, i + 3));
  return out;
}

function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  let shared = 0;
  for (const x of a) if (b.has(x)) shared++;
  const union = a.size + b.size - shared;
  return union > 0 ? shared / union : 0;
}
