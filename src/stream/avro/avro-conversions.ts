import type { LinkedMention, LinkedNote, NoteInput } from '../../link/types.ts';
import type { RecordHeaders } from '../../telemetry/kafka-trace-context.ts';
import type { HeaderRecord, LabelRequestRecord, LinkedMentionRecord, LinkedNoteRecord, NoteEventRecord, ReviewMentionRecord } from './avro-records.ts';
import type { LabelProposal } from '../label-selection/label-proposal.ts';

/**
 * Avro records ↔ the linking core's shapes (src/link/types.ts). The schemas mirror those types
 * field for field, so this only turns absent optionals into nulls and back.
 */

export function noteEventToNoteInput(record: NoteEventRecord): NoteInput {
  return {
    noteId: record.noteId,
    text: record.text,
    mentions: record.mentions.map((m) => ({ id: m.id, start: m.start, end: m.end, text: m.text, label: m.label, score: m.score })),
    source: record.source,
    timestamp: record.timestamp,
    nerModelVersion: record.nerModelVersion,
  };
}

/** `now` stamps a note that has no timestamp (the schema requires one). */
export function noteInputToNoteEvent(note: NoteInput, now: number = Date.now()): NoteEventRecord {
  return {
    noteId: note.noteId,
    text: note.text,
    mentions: note.mentions.map((m) => ({ id: m.id, start: m.start, end: m.end, text: m.text, label: m.label, score: m.score ?? null })),
    source: note.source ?? null,
    timestamp: note.timestamp ?? now,
    nerModelVersion: note.nerModelVersion ?? null,
  };
}

/**
 * The mention fields that are the same in the core type and the record (none is optional in
 * either), in schema order: both directions copy them as they are.
 */
function mentionFieldsAlike(m: LinkedMention | LinkedMentionRecord) {
  return {
    mentionId: m.mentionId,
    start: m.start,
    end: m.end,
    label: m.label,
    conceptId: m.conceptId,
    conceptName: m.conceptName,
    semanticTypes: m.semanticTypes,
    score: m.score,
    confidence: m.confidence,
    via: m.via,
  };
}

export function linkedNoteToAvro(note: LinkedNote): LinkedNoteRecord {
  return {
    noteId: note.noteId,
    mentions: note.mentions.map((m) => ({
      ...mentionFieldsAlike(m),
      inKb: m.inKb ?? null,
      nil: m.nil,
      reranked: m.reranked,
      candidates: m.candidates.map((c) => ({
        conceptId: c.conceptId,
        name: c.name,
        semanticTypes: c.semanticTypes,
        score: c.score,
        retrievalScore: c.retrievalScore,
        exact: c.exact,
        via: c.via,
      })),
      expandedFrom: m.expandedFrom ?? null,
      memoryDecided: m.memoryDecided ?? false,
      memorySupport: m.memorySupport ?? 0,
    })),
    linkerVersion: note.linkerVersion,
    modelVersion: note.modelVersion,
    indexVersion: note.indexVersion,
    memoryVersion: note.memoryVersion ?? null,
    linkedAt: note.linkedAt,
  };
}

export function avroToLinkedNote(record: LinkedNoteRecord): LinkedNote {
  return {
    noteId: record.noteId,
    mentions: record.mentions.map((m) => ({
      ...mentionFieldsAlike(m),
      inKb: m.inKb,
      nil: m.nil,
      reranked: m.reranked,
      candidates: m.candidates.map((c) => ({ ...c })),
      expandedFrom: m.expandedFrom,
      memoryDecided: m.memoryDecided,
      memorySupport: m.memorySupport,
    })),
    linkerVersion: record.linkerVersion,
    modelVersion: record.modelVersion,
    indexVersion: record.indexVersion,
    memoryVersion: record.memoryVersion,
    linkedAt: record.linkedAt,
  };
}

/** One mention of a linked note as a review record (the note's versions and time come along). */
export function linkedMentionToReview(note: LinkedNote, m: LinkedMention): ReviewMentionRecord {
  return {
    noteId: note.noteId,
    mentionId: m.mentionId,
    start: m.start,
    end: m.end,
    label: m.label,
    conceptId: m.conceptId,
    confidence: m.confidence,
    via: m.via,
    inKb: m.inKb ?? null,
    nil: m.nil,
    candidates: m.candidates.map((c) => ({ conceptId: c.conceptId, name: c.name, score: c.score, via: c.via })),
    linkerVersion: note.linkerVersion,
    modelVersion: note.modelVersion,
    indexVersion: note.indexVersion,
    linkedAt: note.linkedAt,
  };
}

/** A label proposal as its LabelRequest record: the span and the linker's view, no text. */
export function labelProposalToAvro(p: LabelProposal): LabelRequestRecord {
  const m = p.mention;
  return {
    noteId: p.noteId,
    mentionId: m.mentionId,
    start: m.start,
    end: m.end,
    label: m.label,
    stream: p.stream,
    policy: p.policy,
    priority: p.priority,
    recurrence: p.recurrence,
    conceptId: m.conceptId,
    confidence: m.confidence,
    via: m.via,
    nil: m.nil,
    candidates: m.candidates.map((c) => ({ conceptId: c.conceptId, name: c.name, score: c.score })),
    memoryVersion: p.versions.memoryVersion,
    linkerVersion: p.versions.linkerVersion,
    modelVersion: p.versions.modelVersion,
    indexVersion: p.versions.indexVersion,
    requestedAt: p.requestedAt,
  };
}

/** Record headers as the DeadLetter's ordered (key, bytes) list; repeated keys stay repeated. */
export function headersToAvro(headers: RecordHeaders | undefined): HeaderRecord[] {
  const out: HeaderRecord[] = [];
  for (const [key, value] of Object.entries(headers ?? {})) {
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) out.push({ key, value: v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v) });
  }
  return out;
}

/** The DeadLetter's header list back as record headers, e.g. to replay the original record. */
export function avroToHeaders(headers: HeaderRecord[]): Record<string, Buffer | Buffer[]> {
  const out: Record<string, Buffer | Buffer[]> = Object.create(null); // any header name, 'constructor' too
  for (const { key, value } of headers) {
    const bytes = value ?? Buffer.alloc(0);
    const existing = out[key];
    out[key] = existing === undefined ? bytes : Array.isArray(existing) ? [...existing, bytes] : [existing, bytes];
  }
  return out;
}
