import { z } from 'zod';
import { timeOf } from './export-fields.ts';
import { splitTypedIds, type SubmissionOrRefusal } from './submission.ts';

/**
 * The plain JSONL answer, for scripts: `{"noteId", "mentionId", "ids": [..] | "conceptId": "A|B",
 * "nil": true, "annotator"?, "annotatedAt"? (epoch ms or ISO), "start"?, "end"?}`. NIL must be said
 * (`"nil": true`, or the id `NIL`): an empty or missing id list is no answer, not NIL, so a
 * forgotten field never becomes a gold "no concept". Offsets, when given, must be the request's.
 */
const lineSchema = z.object({
  noteId: z.string().min(1),
  mentionId: z.string().min(1),
  ids: z.array(z.string()).optional(),
  conceptId: z.string().nullable().optional(),
  nil: z.boolean().optional(),
  annotator: z.string().nullable().optional(),
  // A script's own field: a time the gold cannot carry is its mistake to hear of, not the import time in its place.
  annotatedAt: z.union([z.number(), z.string()]).refine((t) => timeOf(t) !== undefined, 'not a time: epoch milliseconds (a whole number, 0 or more) or an ISO 8601 date-time from 1970 on').optional(),
  start: z.number().int().nonnegative().optional(),
  end: z.number().int().positive().optional(),
});

export function readPlainAnswer(value: unknown): SubmissionOrRefusal {
  const parsed = lineSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { kind: 'not-a-task', reason: `field '${issue.path.join('.') || '(root)'}': ${issue.message}` };
  }
  const line = parsed.data;
  if ((line.start === undefined) !== (line.end === undefined)) return { kind: 'invalid-span', reason: 'give both start and end, or neither' };
  return {
    submission: {
      noteId: line.noteId,
      mentionId: line.mentionId,
      span: line.start === undefined ? undefined : { start: line.start, end: line.end! },
      choices: [],
      typedIds: splitTypedIds([...(line.ids ?? []), line.conceptId ?? '']),
      nil: line.nil === true,
      annotator: line.annotator ?? null,
      annotatedAt: timeOf(line.annotatedAt),
    },
  };
}
