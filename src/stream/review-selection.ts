import type { LinkedMention, LinkedNote } from '../link/types.ts';

/**
 * The mentions of a linked note that go to the review topic: NIL ones, and those whose calibrated
 * confidence is under `belowConfidence`. Without a calibration (confidence null) only NIL ones:
 * a raw score is no probability to compare a threshold with.
 */
export function mentionsToReview(note: LinkedNote, belowConfidence: number): LinkedMention[] {
  return note.mentions.filter((m) => m.nil || (m.confidence !== null && m.confidence < belowConfidence));
}
