import { normalizeId } from '../../kb/ids.ts';
import { mentionKey, type GoldMention } from '../gold.ts';
import { requestLabel } from './label-request-line.ts';
import { NIL_CHOICE } from './labeling-config.ts';
import { quoteTyped, type RefusalKind } from './refusal.ts';
import type { Submission } from './submission.ts';
import type { TaskLedger } from './task-ledger.ts';

/** The concept ids gold may use: the index's KB (src/kb ConceptStore has this method). */
export interface ConceptIds {
  /** The primary id of a primary or alt id, raw or normalized; undefined when the KB lacks it. */
  resolveId(id: string): string | undefined;
}

/** An accepted answer: a gold mention (ids non-empty) or a NIL (ids empty), with provenance. */
export interface AcceptedLabel {
  gold: GoldMention;
  nil: boolean;
  stream: 'learn' | 'measure';
  /** The mention's text (from the ledger), for `cuilink memory add --jsonl`. */
  text: string;
  annotator: string | null;
  annotatedAt: number;
}

export type Verdict = { accepted: AcceptedLabel } | { kind: RefusalKind; reason: string };

/** Typed in the free id field, these mean 'none of these' (`-1` is the corpora's "no concept"). */
const TYPED_NIL = new Set([NIL_CHOICE.toLowerCase(), 'none', '-1']);

/**
 * Judges submissions against what was exported (the ledger) and the KB, in input order: the
 * request must be one the export made, the span the requested one, each ticked choice one the
 * task offered, each typed id a KB concept (stored as its primary id), and the answer either
 * concepts or NIL, not both, not neither. The first accepted answer of a request wins; a later
 * one is refused as a duplicate, saying whether it agreed, so disagreements are seen.
 */
export class AnnotationJudge {
  private readonly ledger: TaskLedger;
  private readonly concepts: ConceptIds;
  private readonly now: () => number;
  private readonly accepted = new Map<string, { where: string; ids: string[] }>();

  constructor(ledger: TaskLedger, concepts: ConceptIds, options: { now?: () => number } = {}) {
    this.ledger = ledger;
    this.concepts = concepts;
    this.now = options.now ?? Date.now;
  }

  /** `where` names the input position of the answer (for a duplicate's reason). */
  judge(s: Submission, where: string): Verdict {
    const id = requestLabel(s.noteId, s.mentionId);
    const entry = this.ledger.get(s.noteId, s.mentionId);
    if (!entry) return { kind: 'unknown-request', reason: `request ${id}: never exported (in no tasks file given)` };
    const expected = `[${entry.start}, ${entry.end})`;
    if (s.taskSpan && (s.taskSpan.start !== entry.start || s.taskSpan.end !== entry.end)) {
      return { kind: 'span-mismatch', reason: `request ${id}: the task data's span [${s.taskSpan.start}, ${s.taskSpan.end}) is not the exported ${expected}` };
    }
    if (s.span && (s.span.start !== entry.start || s.span.end !== entry.end)) {
      return { kind: 'span-mismatch', reason: `request ${id}: the annotated span [${s.span.start}, ${s.span.end}) is not the requested ${expected} (a moved boundary is an NER correction, not gold for this mention)` };
    }
    const ids: string[] = [];
    let nil = s.nil;
    for (const choice of s.choices) {
      if (!entry.candidateIds.has(choice)) return { kind: 'not-a-candidate', reason: `request ${id}: choice ${quoteTyped(choice)} is not one of the task's candidates` };
      const primary = this.concepts.resolveId(choice);
      if (primary === undefined) return { kind: 'unknown-concept', reason: `request ${id}: candidate ${quoteTyped(choice)} is not a concept of the index's KB` };
      if (!ids.includes(primary)) ids.push(primary);
    }
    for (const typed of s.typedIds) {
      if (TYPED_NIL.has(typed.toLowerCase())) {
        nil = true;
        continue;
      }
      const primary = this.concepts.resolveId(typed) ?? this.concepts.resolveId(normalizeId(typed));
      if (primary === undefined) return { kind: 'unknown-concept', reason: `request ${id}: unknown concept id ${quoteTyped(typed)} (not in the index's KB)` };
      if (!ids.includes(primary)) ids.push(primary);
    }
    if (nil && ids.length > 0) return { kind: 'nil-conflict', reason: `request ${id}: 'none of these / NIL' together with concept ${ids.join(', ')}` };
    if (!nil && ids.length === 0) return { kind: 'no-answer', reason: `request ${id}: no answer (no candidate ticked, not NIL, no id typed)` };
    const key = mentionKey(s.noteId, s.mentionId);
    const first = this.accepted.get(key);
    if (first) {
      const same = [...first.ids].sort().join('|') === [...ids].sort().join('|');
      return { kind: 'duplicate', reason: `request ${id}: annotated again; the first answer (${first.where}) is kept, this one ${same ? 'agrees' : `differs (${ids.join(', ') || NIL_CHOICE} against ${first.ids.join(', ') || NIL_CHOICE})`}` };
    }
    this.accepted.set(key, { where, ids });
    return {
      accepted: {
        gold: { noteId: s.noteId, mentionId: s.mentionId, ids, label: entry.label, start: entry.start, end: entry.end },
        nil,
        stream: entry.stream,
        text: entry.surface,
        annotator: s.annotator,
        annotatedAt: s.annotatedAt ?? this.now(),
      },
    };
  }
}
