import { mentionKey } from '../src/eval/gold.ts';
import type { LinkedNote, NoteInput } from '../src/link/types.ts';
import { normalizeName } from '../src/text/normalize.ts';
import { LabelSelector } from '../src/stream/label-selection/label-selector.ts';
import type { SelectionPolicy } from '../src/stream/label-selection/selection-policy.ts';

export interface ReplayRequest {
  /** The stream in order, and each note's link (same order). */
  notes: readonly NoteInput[];
  linked: readonly LinkedNote[];
  policy: SelectionPolicy;
  recurrenceExponent: number;
  /** Labels in all. */
  budget: number;
  /** Equal windows of notes; each window's end asks budget/windows labels. */
  windows: number;
}

/**
 * Replays a linked stream through the stage's LabelSelector with note index as the clock and
 * returns the chosen learn-stream mentions (mentionKey), at most `budget`, in the order asked.
 */
export function replaySelection(request: ReplayRequest): string[] {
  const notesPerWindow = Math.ceil(request.notes.length / request.windows);
  const selector = new LabelSelector({
    policy: request.policy,
    budget: Math.ceil(request.budget / request.windows),
    windowMs: notesPerWindow,
    recurrenceExponent: request.recurrenceExponent,
    measureFraction: 0,
    measureBudget: 0,
    surfaceKey: normalizeName,
  });
  const chosen: string[] = [];
  const keep = (now: number, closeWindow: boolean) => {
    const proposals = selector.take(now, { closeWindow });
    selector.confirm(proposals);
    for (const p of proposals) if (chosen.length < request.budget) chosen.push(mentionKey(p.noteId, p.mention.mentionId));
  };
  request.notes.forEach((note, i) => {
    keep(i, false);
    selector.observe(note, request.linked[i]!, i);
  });
  keep(request.notes.length, true);
  return chosen;
}
