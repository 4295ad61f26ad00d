import { readLines } from '../../kb/line-reader.ts';
import { validateNote } from '../../link/validate-note.ts';
import { documentToNote } from '../gold.ts';
import { readPubTator } from '../pubtator.ts';
import type { Refusal } from './label-request-file.ts';
import { parseJsonSafely } from '../../kb/safe-json.ts';

/** A note as the annotator sees it: its text and its NER mentions' spans by mention id. */
export interface NoteText {
  text: string;
  spans: Map<string, { start: number; end: number }>;
}

export interface NoteTexts {
  notes: Map<string, NoteText>;
  /** Lines of the notes file that are not notes (the reason names ids, never text). */
  refused: Refusal[];
}

/**
 * Label requests carry no text (PHI stays where the notes are): the export joins each to its note
 * by note id. Only the wanted notes are kept in memory; a note id seen twice keeps the first, as
 * a PubTator reader does.
 */
export async function readPubTatorNotes(file: string, wanted: ReadonlySet<string>): Promise<NoteTexts> {
  const notes = new Map<string, NoteText>();
  for await (const doc of readPubTator(file)) {
    if (!wanted.has(doc.pmid) || notes.has(doc.pmid)) continue;
    const { note } = documentToNote(doc);
    notes.set(note.noteId, { text: note.text, spans: new Map(note.mentions.map((m) => [m.id, { start: m.start, end: m.end }])) });
  }
  return { notes, refused: [] };
}

/** Note events as `cuilink link` reads them: one NoteEvent JSON object per line. */
export async function readNoteJsonl(file: string, wanted: ReadonlySet<string>): Promise<NoteTexts> {
  const result: NoteTexts = { notes: new Map(), refused: [] };
  for await (const { text, number } of readLines(file)) {
    if (text.trim() === '') continue;
    const where = `notes line ${number}`;
    const parsed = parseJsonSafely(text);
    if ('reason' in parsed) {
      result.refused.push({ where, reason: parsed.reason });
      continue;
    }
    try {
      // validateNote's messages name ids and offsets only.
      const note = validateNote(parsed.value);
      if (!wanted.has(note.noteId) || result.notes.has(note.noteId)) continue;
      result.notes.set(note.noteId, { text: note.text, spans: new Map(note.mentions.map((m) => [m.id, { start: m.start, end: m.end }])) });
    } catch (error) {
      result.refused.push({ where, reason: (error as Error).message });
    }
  }
  return result;
}
