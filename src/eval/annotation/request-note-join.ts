import type { LabelRequestRecord } from '../../stream/avro/avro-records.ts';
import { mentionKey } from '../gold.ts';
import type { Refusal, SourcedRequest } from './label-request-file.ts';
import { requestLabel } from './label-request-line.ts';
import type { NoteText } from './note-text-source.ts';

/** A request joined with the text it points into: what a task is built from. */
export interface JoinedRequest {
  request: LabelRequestRecord;
  noteText: string;
  /** The mention's surface, noteText.slice(start, end). */
  surface: string;
}

export interface JoinResult {
  joined: JoinedRequest[];
  refused: Refusal[];
}

/**
 * Joins requests to their notes, in input order. Refused: a request whose note the source lacks,
 * whose span falls outside the note, or whose span differs from the note's own mention of that id
 * (the notes are not the ones the stage linked); a request asked again (the topic is read
 * at least once) is refused as a duplicate so every request is one task.
 */
export function joinRequestsToNotes(requests: readonly SourcedRequest[], notes: ReadonlyMap<string, NoteText>): JoinResult {
  const result: JoinResult = { joined: [], refused: [] };
  const seen = new Map<string, string>();
  for (const { request, where } of requests) {
    const id = requestLabel(request.noteId, request.mentionId);
    const refuse = (reason: string) => result.refused.push({ where, reason: `request ${id}: ${reason}` });
    const key = mentionKey(request.noteId, request.mentionId);
    const first = seen.get(key);
    if (first !== undefined) {
      refuse(`duplicate request (first at ${first})`);
      continue;
    }
    const note = notes.get(request.noteId);
    if (!note) {
      refuse('its note is not in the notes source');
      continue;
    }
    if (request.end > note.text.length) {
      refuse(`span [${request.start}, ${request.end}) is outside the note (length ${note.text.length})`);
      continue;
    }
    const own = note.spans.get(request.mentionId);
    if (own !== undefined && (own.start !== request.start || own.end !== request.end)) {
      refuse(`span [${request.start}, ${request.end}) differs from the note's mention ${request.mentionId} at [${own.start}, ${own.end})`);
      continue;
    }
    seen.set(key, where);
    result.joined.push({ request, noteText: note.text, surface: note.text.slice(request.start, request.end) });
  }
  return result;
}
