import { z } from 'zod';
import { MAX_DATE_MS } from '../../kb/epoch-time.ts';
import type { LabelRequestRecord } from '../../stream/avro/avro-records.ts';

/**
 * A LabelRequest as one JSON line: the Avro record's fields (schemas/label-request.avsc) with its
 * JSON types, so `kcat`/`kafka-avro-console-consumer` output or a script's dump reads as is.
 * Optional fields may be absent; `requestedAt` is epoch milliseconds or an ISO date.
 */
const requestLineSchema = z.object({
  noteId: z.string().min(1),
  mentionId: z.string().min(1),
  start: z.number().int().nonnegative(),
  end: z.number().int().positive(),
  label: z.string(),
  stream: z.enum(['learn', 'measure']),
  policy: z.string().default(''),
  priority: z.number().finite().default(0),
  recurrence: z.number().int().nonnegative().default(1),
  conceptId: z.string().nullable().default(null),
  confidence: z.number().finite().nullable().default(null),
  via: z.string().nullable().default(null),
  nil: z.boolean().default(false),
  candidates: z.array(z.object({ conceptId: z.string().min(1), name: z.string(), score: z.number().finite() }).strip()).default([]),
  memoryVersion: z.string().nullable().default(null),
  linkerVersion: z.string().default(''),
  modelVersion: z.string().default(''),
  indexVersion: z.string().default(''),
  // The export writes it as an ISO time: past what a Date holds, toISOString throws.
  requestedAt: z.union([z.number().int().nonnegative().max(MAX_DATE_MS), z.string().datetime({ offset: true }).transform((s) => Date.parse(s))]).default(0),
});

/** The request as a record, or the reason it is not one (the field path and zod's message; a LabelRequest holds no text). */
export function parseLabelRequest(value: unknown): { request: LabelRequestRecord } | { reason: string } {
  const parsed = requestLineSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { reason: `not a LabelRequest: field '${issue.path.join('.') || '(root)'}': ${issue.message}` };
  }
  if (parsed.data.end <= parsed.data.start) return { reason: `empty or reversed span [${parsed.data.start}, ${parsed.data.end})` };
  return { request: parsed.data };
}

/** What identifies a request across export and import: Label Studio keeps no id of ours, so the task data carries both parts. */
export function requestLabel(noteId: string, mentionId: string): string {
  return `${noteId}/${mentionId}`;
}
