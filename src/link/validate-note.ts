import { InputError } from '../kb/errors.ts';
import type { NoteInput } from './types.ts';

export interface NoteLimits {
  maxNoteChars: number;
  maxMentions: number;
  maxMentionChars: number;
}

export const DEFAULT_NOTE_LIMITS: NoteLimits = { maxNoteChars: 100_000, maxMentions: 1_000, maxMentionChars: 512 };

/**
 * Checks a note event's shape and spans once, at entry (CLI line, Kafka record), so the linking
 * core can trust it. Throws InputError with a code the stream maps to a dead-letter reason;
 * messages name ids and offsets, never note text (PHI).
 */
export function validateNote(value: unknown, limits: NoteLimits = DEFAULT_NOTE_LIMITS): NoteInput {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InputError('note event must be a JSON object', 'BAD_NOTE');
  const note = value as Record<string, unknown>;
  if (typeof note.noteId !== 'string' || note.noteId.length === 0) throw new InputError('noteId must be a non-empty string', 'BAD_NOTE');
  const where = `note ${note.noteId}`;
  if (typeof note.text !== 'string') throw new InputError(`${where}: text must be a string`, 'BAD_NOTE');
  if (note.text.length === 0) throw new InputError(`${where}: empty text`, 'EMPTY_NOTE');
  if (note.text.length > limits.maxNoteChars) throw new InputError(`${where}: ${note.text.length} characters exceeds the limit of ${limits.maxNoteChars}`, 'NOTE_TOO_LARGE');
  if (!Array.isArray(note.mentions)) throw new InputError(`${where}: mentions must be an array`, 'BAD_NOTE');
  if (note.mentions.length > limits.maxMentions) throw new InputError(`${where}: ${note.mentions.length} mentions exceeds the limit of ${limits.maxMentions}`, 'NOTE_TOO_LARGE');
  const ids = new Set<string>();
  for (const [i, raw] of note.mentions.entries()) {
    const m = raw as Record<string, unknown>;
    const at = `${where} mention #${i}`;
    if (typeof m !== 'object' || m === null) throw new InputError(`${at}: must be an object`, 'BAD_MENTION');
    if (typeof m.id !== 'string' || m.id.length === 0) throw new InputError(`${at}: id must be a non-empty string`, 'BAD_MENTION');
    if (ids.has(m.id)) throw new InputError(`${at}: duplicate mention id '${m.id}'`, 'BAD_MENTION');
    ids.add(m.id);
    if (!Number.isInteger(m.start) || !Number.isInteger(m.end)) throw new InputError(`${at}: start and end must be integers`, 'BAD_SPAN');
    const start = m.start as number;
    const end = m.end as number;
    if (start < 0 || end > note.text.length || start >= end) throw new InputError(`${at}: span [${start}, ${end}) is outside the text (length ${note.text.length}) or empty`, 'BAD_SPAN');
    if (end - start > limits.maxMentionChars) throw new InputError(`${at}: span of ${end - start} characters exceeds the limit of ${limits.maxMentionChars}`, 'BAD_SPAN');
    if (typeof m.text !== 'string' || m.text !== note.text.slice(start, end)) throw new InputError(`${at}: mention text does not match the span [${start}, ${end}) (offsets are UTF-16 code units, end exclusive: a character outside the Basic Multilingual Plane, e.g. an emoji, counts 2)`, 'SPAN_TEXT_MISMATCH');
    if (typeof m.label !== 'string') throw new InputError(`${at}: label must be a string`, 'BAD_MENTION');
    if (m.score !== undefined && m.score !== null && typeof m.score !== 'number') throw new InputError(`${at}: score must be a number`, 'BAD_MENTION');
  }
  return value as NoteInput;
}
