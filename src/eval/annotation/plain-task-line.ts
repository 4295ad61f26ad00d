import type { LabelRequestRecord } from '../../stream/avro/avro-records.ts';
import { requestLabel } from './label-request-line.ts';
import type { JoinedRequest } from './request-note-join.ts';

/**
 * The plain JSONL export, for scripts and tools other than Label Studio: one request per line with
 * its mention text, its note and the linker's candidates. `cuilink annotate import --tasks` reads
 * it as the ledger just as it reads the Label Studio tasks file.
 */
export type PlainTaskLine = { requestId: string } & Pick<LabelRequestRecord, 'noteId' | 'mentionId' | 'start' | 'end' | 'label' | 'stream' | 'policy' | 'priority'> & {
  text: string;
  noteText: string;
} & Pick<LabelRequestRecord, 'conceptId' | 'confidence' | 'nil' | 'candidates'>;

export function buildPlainTaskLine({ request: r, noteText, surface }: JoinedRequest): PlainTaskLine {
  return {
    requestId: requestLabel(r.noteId, r.mentionId),
    noteId: r.noteId,
    mentionId: r.mentionId,
    start: r.start,
    end: r.end,
    label: r.label,
    stream: r.stream,
    policy: r.policy,
    priority: r.priority,
    text: surface,
    noteText,
    conceptId: r.conceptId,
    confidence: r.confidence,
    nil: r.nil,
    candidates: r.candidates.map((c) => ({ conceptId: c.conceptId, name: c.name, score: c.score })),
  };
}
