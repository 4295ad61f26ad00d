import type { ConceptStore } from '../../kb/concept-store.ts';
import { looseKey } from '../../text/loose-key.ts';
import { normalizeName } from '../../text/normalize.ts';
import { mentionIdOf, mentionKey, type GoldCorpus, type GoldMention } from '../gold.ts';
import { noteDraw } from '../gold-sampling.ts';
import { seededRandom } from '../seeded-random.ts';
import { evaluateCorpus, type OfflineEvalResult } from '../offline-eval.ts';
import type { OntologyView } from '../metrics/ontology-view.ts';
import type { LinkingCore } from '../../link/types.ts';
import type { ConceptFactsView } from '../../link/confidence-features.ts';
import { calibrationExamples } from './calibration-examples.ts';

/** Gold id of a sampled non-entity span: no KB has it, so the span's right answer is NIL. */
export const NON_ENTITY_ID = 'cuilink:non-entity';
/** NER label of a sampled span, so that reports show them as their own group. */
export const NON_ENTITY_LABEL = 'NonEntity';

/**
 * Words a span may not begin or end with: a span bounded by one is a fragment of a clause, and the
 * corpus's own vocabulary for "study", "patients", "cases" would dominate the sample.
 */
const STOP_WORDS = new Set(
  `a an the of in on at to for from by with and or but not no is are was were be been being this that these those it its
  as we our their they he she his her which who whom whose than then there here such both each all any some more most
  other into over under between among after before during about against within without via per also only can may might
  could would should will shall do does did has have had i ii iii one two three using used use study studies result
  results patient patients case cases analysis`.split(/\s+/),
);
const WORD = /[A-Za-z][A-Za-z0-9'-]*[A-Za-z0-9]|[A-Za-z]/g;
/** A span this close to an annotation may be part of an unmarked longer disease name. */
const MIN_GAP = 15;
const MIN_CHARS = 4;
const MAX_WORDS = 3;

export interface NonEntitySample {
  /** The corpus with the sampled spans added as mentions whose gold is NON_ENTITY_ID. */
  corpus: GoldCorpus;
  /** Spans added. */
  spans: number;
  /** Whether a mention (by mentionKey) is a sampled span. */
  isNonEntity: (key: string) => boolean;
}

/**
 * NER false positives without hand labels: spans of a corpus's own text that its annotators did not
 * mark. In a corpus that marks every disease mention (NCBI-disease), such a span names no disease,
 * so a linker should come out NIL on it. Per note, `perNote` spans of 1-3 words are drawn, seeded by
 * the note id, among those joined by single spaces, not bounded by a stop word, at least 4
 * characters, at least 15 characters from every annotation, and neither a KB name (strict or loose
 * key) nor the text of a gold mention of the corpus (those are likelier unmarked diseases). The
 * sample is easier than real NER false positives (it has verbs and fragments): a proxy, said so
 * wherever its figures are quoted (docs/confidence.md).
 */
export function withNonEntitySpans(corpus: GoldCorpus, store: ConceptStore, perNote: number, seed: number): NonEntitySample {
  const named = new Set<string>();
  for (const concept of store) {
    for (const name of [concept.name, ...concept.synonyms]) {
      named.add(normalizeName(name));
      named.add(looseKey(name));
    }
  }
  for (const note of corpus.notes) for (const m of note.mentions) named.add(normalizeName(m.text));
  const gold = new Map(corpus.gold);
  const added = new Set<string>();
  const notes = corpus.notes.map((note) => {
    const taken = note.mentions.map((m) => [m.start, m.end] as const);
    const candidates = candidateSpans(note.text).filter(([start, end]) => {
      if (taken.some(([s, e]) => start < e + MIN_GAP && s - MIN_GAP < end)) return false;
      const text = note.text.slice(start, end);
      return !named.has(normalizeName(text)) && !named.has(looseKey(text));
    });
    const random = seededRandom(Math.floor(noteDraw(note.noteId, seed) * 2 ** 32));
    const picked: (readonly [number, number])[] = [];
    while (picked.length < perNote && candidates.length > 0) picked.push(candidates.splice(Math.floor(random() * candidates.length), 1)[0]!);
    const mentions = picked.map(([start, end]) => {
      const id = mentionIdOf(start, end);
      const g: GoldMention = { noteId: note.noteId, mentionId: id, ids: [NON_ENTITY_ID], label: NON_ENTITY_LABEL, start, end };
      gold.set(mentionKey(note.noteId, id), g);
      added.add(mentionKey(note.noteId, id));
      return { id, start, end, text: note.text.slice(start, end), label: NON_ENTITY_LABEL };
    });
    return { ...note, mentions: [...note.mentions, ...mentions].sort((a, b) => a.start - b.start || a.end - b.end) };
  });
  return { corpus: { notes, gold, stats: corpus.stats }, spans: added.size, isNonEntity: (key) => added.has(key) };
}

/** Every run of 1-3 words joined by single spaces, not bounded by a stop word, of at least 4 characters. */
function candidateSpans(text: string): [number, number][] {
  const words = [...text.matchAll(WORD)].map((m) => ({ start: m.index!, end: m.index! + m[0].length, stop: STOP_WORDS.has(m[0].toLowerCase()) }));
  const spans: [number, number][] = [];
  for (let i = 0; i < words.length; i++) {
    for (let n = 1; n <= MAX_WORDS && i + n <= words.length; n++) {
      const last = words[i + n - 1]!;
      if (n > 1 && text.slice(words[i + n - 2]!.end, last.start) !== ' ') break;
      if (words[i]!.stop || last.stop || last.end - words[i]!.start < MIN_CHARS) continue;
      spans.push([words[i]!.start, last.end]);
    }
  }
  return spans;
}

/**
 * The non-entity part's examples: the corpus linked with `perNote` sampled spans added, each linked
 * mention's features labelled by whether it is a span (`indices` into `result`, as calibrationExamples).
 */
export async function nonEntityExamples(linker: LinkingCore, corpus: GoldCorpus, store: ConceptStore, view: OntologyView, facts: ConceptFactsView, perNote: number, seed: number) {
  const sample = withNonEntitySpans(corpus, store, perNote, seed);
  const result = await evaluateCorpus(linker, sample.corpus, view);
  return { sample, result, ...calibrationExamples(sample.corpus, result, facts, (s) => sample.isNonEntity(mentionKey(s.noteId, s.mentionId))) };
}

/** Seed of `eval --non-entities` draws by default: not the one `cuilink calibrate` fits on (1). */
export const NON_ENTITY_EVAL_SEED = 2;

export interface NonEntityReport {
  perNote: number;
  seed: number;
  spans: number;
  /** Spans that came out NIL: what a NER false positive should do. */
  nil: number;
  nilShare: number;
  /** Linked spans under confidence 0.5 (the review topic's default bar), among those with a confidence. */
  underHalf: number;
  withConfidence: number;
}

/** How a linker treated the sampled spans of an evaluation of `sample.corpus`. */
export function nonEntityReport(result: Pick<OfflineEvalResult, 'scored' | 'linked'>, sample: NonEntitySample, perNote: number, seed: number): NonEntityReport {
  let spans = 0;
  let nil = 0;
  let underHalf = 0;
  let withConfidence = 0;
  result.scored.forEach((s, i) => {
    if (!sample.isNonEntity(mentionKey(s.noteId, s.mentionId))) return;
    const linked = result.linked[i]!;
    spans++;
    if (linked.nil) nil++;
    else if (linked.confidence !== null) {
      withConfidence++;
      if (linked.confidence < 0.5) underHalf++;
    }
  });
  return { perNote, seed, spans, nil, nilShare: spans > 0 ? nil / spans : 0, underHalf, withConfidence };
}

export function formatNonEntity(r: NonEntityReport): string {
  const linked = r.spans - r.nil;
  const review = r.withConfidence > 0 ? `; of the ${linked} linked, ${r.underHalf} under confidence 0.5` : '';
  return `non-entity spans (${r.perNote} unmarked span(s) per note, seed ${r.seed}; a proxy for NER false positives, easier than real ones): ${r.spans}, NIL ${r.nil} (${(r.nilShare * 100).toFixed(1)}%)${review}`;
}
