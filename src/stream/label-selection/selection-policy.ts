import type { LinkedMention } from '../../link/types.ts';
import { noteDraw } from './note-draw.ts';

/**
 * How the learn stream picks mentions under a label budget (docs/active-learning.md):
 * - `random-note`: whole notes in a random order, as `gold-sample --fraction` draws them (the old way);
 * - `random-mention`: single mentions in a random order;
 * - `confidence`: the least confident link first;
 * - `confidence-recurrence`: uncertainty × recurrence^α, so a doubtful surface the stream keeps
 *   repeating is asked before a doubtful one-off (one label teaches the memory every repeat).
 * The two need-driven policies ask each surface once and never one the memory already holds.
 */
export const SELECTION_POLICIES = ['random-note', 'random-mention', 'confidence', 'confidence-recurrence'] as const;
export type SelectionPolicy = (typeof SELECTION_POLICIES)[number];

/** The defaults, chosen on the tune split by bench:active (bench/results/active-learning.json). */
export const DEFAULT_LABEL_POLICY: SelectionPolicy = 'confidence';
export const DEFAULT_RECURRENCE_EXPONENT = 2;

export function isNeedDriven(policy: SelectionPolicy): boolean {
  return policy === 'confidence' || policy === 'confidence-recurrence';
}

/**
 * How unsure the linker is of a mention, in [0, 1]: 1 − its calibrated confidence; without a
 * calibration 1 − its top score (the best signal there is); NIL (no candidate at all) counts as 1.
 */
export function uncertaintyOf(mention: LinkedMention): number {
  if (mention.confidence !== null) return 1 - mention.confidence;
  if (mention.conceptId === null && mention.candidates.length === 0) return 1;
  return 1 - Math.min(1, Math.max(0, mention.score));
}

export interface PriorityInput {
  noteId: string;
  mentionId: string;
  uncertainty: number;
  recurrence: number;
}

/** The policy's priority of a mention (higher is asked first); random draws are seeded and order-free. */
export function priorityOf(policy: SelectionPolicy, input: PriorityInput, options: { seed: number; recurrenceExponent: number }): number {
  switch (policy) {
    case 'random-note':
      // One draw per note; mentions of a note follow each other (a tiny per-mention part breaks the tie).
      return 1 - noteDraw(input.noteId, options.seed) - noteDraw(`${input.noteId}\u0000${input.mentionId}`, options.seed) * 1e-9;
    case 'random-mention':
      return 1 - noteDraw(`${input.noteId}\u0000${input.mentionId}`, options.seed);
    case 'confidence':
      return input.uncertainty;
    case 'confidence-recurrence':
      return input.uncertainty * Math.pow(Math.max(1, input.recurrence), options.recurrenceExponent);
  }
}
