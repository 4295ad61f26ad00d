import { ParseError } from '../kb/errors.ts';
import type { NoteInput } from '../link/types.ts';
import { emptyPubTatorStats, readPubTator, type PubTatorDocument, type PubTatorStats, type ReadPubTatorOptions } from './pubtator.ts';

/**
 * A coder's label for one mention: what `cuilink gold-sample` publishes to the gold topic and
 * what `cuilink eval` reads from a corpus. Joined with predictions by (noteId, mentionId).
 */
export interface GoldMention {
  noteId: string;
  mentionId: string;
  /** Normalized acceptable ids (a composite gives several); a hit on any one counts. */
  ids: string[];
  /** NER label (the corpus's entity type). */
  label: string;
  start: number;
  end: number;
}

/**
 * The most concept ids one gold label read from the gold topic may name, as written (repeats
 * counted). A composite names a few (NCBI-disease: at most 4 in dev, 5 in train); 64 leaves room
 * for any real one. The topic is anyone's to write, and scoring a label costs graded relevances per
 * distinct id, the joiner, state file and memory hold every id: a label naming more is refused
 * (RECORD_TOO_LARGE) by the evaluator and the memory updater alike.
 */
export const MAX_GOLD_IDS = 64;

/**
 * A corpus label naming more than MAX_GOLD_IDS distinct ids is one the gold topic's readers refuse:
 * every tool that reads a corpus as gold (eval, calibrate, memory add, gold-sample) refuses the
 * corpus whole on it, so that none scores, fits, learns or publishes a label the stream would not
 * take, and all of them refuse the same files.
 */
export function refuseOversizedGoldLabels(file: string, doc: PubTatorDocument): void {
  for (const a of doc.annotations) {
    if (a.ids.length > MAX_GOLD_IDS) {
      throw new ParseError(file, a.line, `document ${doc.pmid}, mention ${mentionIdOf(a.start, a.end)}: a gold label naming ${a.ids.length} concept ids; at most ${MAX_GOLD_IDS} are read (the gold topic's readers refuse more), so the corpus is refused`);
    }
  }
}

/** Mention ids are the span, so the same annotation gets the same id in every run and tool. */
export function mentionIdOf(start: number, end: number): string {
  return `${start}-${end}`;
}

/** Join key of a mention; NUL cannot occur in either part of a key from a PubTator file. */
export function mentionKey(noteId: string, mentionId: string): string {
  return `${noteId}\u0000${mentionId}`;
}

/** A PubTator document as the note the linker takes and the gold labels of its mentions. */
export function documentToNote(doc: PubTatorDocument): { note: NoteInput; gold: GoldMention[] } {
  const gold: GoldMention[] = [];
  const mentions = doc.annotations.map((a) => {
    const id = mentionIdOf(a.start, a.end);
    gold.push({ noteId: doc.pmid, mentionId: id, ids: a.ids, label: a.type, start: a.start, end: a.end });
    return { id, start: a.start, end: a.end, text: a.text, label: a.type };
  });
  return { note: { noteId: doc.pmid, text: doc.text, mentions, source: 'pubtator' }, gold };
}

export interface GoldCorpus {
  /** Notes with at least one mention, in file order. */
  notes: NoteInput[];
  /**
   * Every document id the file holds, with or without a usable annotation (the tuning split is
   * drawn over these, so `--types` or skipped `-1` gold never moves a document between parts);
   * a corpus built otherwise draws over its notes.
   */
  documentIds?: readonly string[];
  /** By mentionKey(noteId, mentionId). */
  gold: Map<string, GoldMention>;
  stats: PubTatorStats;
}

/** Reads a whole PubTator corpus (the offline evaluator needs every note before batching). */
export async function loadPubTatorCorpus(file: string, options: Omit<ReadPubTatorOptions, 'stats'> = {}): Promise<GoldCorpus> {
  const stats = emptyPubTatorStats();
  const notes: NoteInput[] = [];
  const gold = new Map<string, GoldMention>();
  const documentIds: string[] = [];
  for await (const doc of readPubTator(file, { ...options, stats })) {
    documentIds.push(doc.pmid);
    refuseOversizedGoldLabels(file, doc);
    if (doc.annotations.length === 0) continue;
    const converted = documentToNote(doc);
    notes.push(converted.note);
    for (const g of converted.gold) gold.set(mentionKey(g.noteId, g.mentionId), g);
  }
  return { notes, gold, stats, documentIds };
}
