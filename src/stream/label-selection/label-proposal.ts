import type { LinkedMention, LinkedNote } from '../../link/types.ts';
import type { SelectionPolicy } from './selection-policy.ts';

/** A mention the selector asks annotators to label: a LabelRequest record before encoding. */
export interface LabelProposal {
  stream: 'learn' | 'measure';
  /** The learn stream's policy, or `random-note` for the measure slice. */
  policy: SelectionPolicy;
  priority: number;
  /** Occurrences of the mention's surface in the stream when it was chosen. */
  recurrence: number;
  noteId: string;
  mention: LinkedMention;
  versions: Pick<LinkedNote, 'linkerVersion' | 'modelVersion' | 'indexVersion'> & { memoryVersion: string | null };
  requestedAt: number;
}
