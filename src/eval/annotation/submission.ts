import type { RefusalKind } from './refusal.ts';

/**
 * One annotator's answer for one request, whatever it came from (a Label Studio annotation, a
 * plain JSONL line), before it is judged against the ledger and the KB.
 */
export interface Submission {
  noteId: string;
  mentionId: string;
  /** The span the task data claims (Label Studio), checked against the ledger. */
  taskSpan?: { start: number; end: number };
  /** The span the annotator kept; absent where the source has none (plain JSONL without offsets). */
  span?: { start: number; end: number };
  /** Candidate choices ticked: each must be one the task offered. */
  choices: string[];
  /** Ids typed in (the free id field, a JSONL line's ids): any concept of the KB. */
  typedIds: string[];
  /** 'none of these / NIL' was chosen. */
  nil: boolean;
  annotator: string | null;
  annotatedAt: number | undefined;
}

export type SubmissionOrRefusal = { submission: Submission } | { kind: RefusalKind; reason: string };

/**
 * Splits what was typed into one free id field: ids separated by `|`, `+`, commas, semicolons or
 * line breaks. Spaces do not separate: typed words stay one value, refused whole and not shown.
 */
export function splitTypedIds(texts: readonly string[]): string[] {
  return texts.flatMap((t) => t.split(/[|+,;\n]+/)).map((t) => t.trim()).filter((t) => t !== '');
}
