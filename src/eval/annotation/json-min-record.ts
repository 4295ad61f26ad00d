import { annotatorOf, idOf, timeOf } from './export-fields.ts';
import { CONTROL } from './labeling-config.ts';
import type { ExportedTask } from './label-studio-export.ts';

/** Keys Label Studio's JSON-MIN export adds beside the task data. */
const META_KEYS = new Set(['id', 'annotator', 'annotation_id', 'created_at', 'updated_at', 'lead_time', 'drafts', 'predictions']);

/**
 * A JSON-MIN record — one annotation, flattened: `{id, annotator, annotation_id, updated_at, …data
 * fields, span: [{start, end, text, labels}], concept: "ID" | {choices: [..]}, none: "NIL",
 * other_id: "text"}` (a Choices answer with one choice and a TextArea with one text are written
 * bare) — rebuilt as the JSON export's task with one annotation, so both forms are judged by the
 * same code. A record with no answer and no annotation id is a task nobody annotated.
 */
export function jsonMinRecordToTask(record: Record<string, unknown>): Omit<ExportedTask, 'line'> {
  // Answer controls only: the Text tag produces no answer, and its name is the note's data key
  // (`text`), which the code-point span conversion needs.
  const controls = new Set<string>([CONTROL.span, CONTROL.concept, CONTROL.none, CONTROL.otherId]);
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) if (!META_KEYS.has(key) && !controls.has(key)) data[key] = value;
  const result: unknown[] = [];
  if (record[CONTROL.span] !== undefined) {
    const spans = Array.isArray(record[CONTROL.span]) ? (record[CONTROL.span] as unknown[]) : [record[CONTROL.span]];
    for (const value of spans) result.push({ from_name: CONTROL.span, to_name: CONTROL.text, type: 'labels', value });
  }
  for (const name of [CONTROL.concept, CONTROL.none]) {
    if (record[name] !== undefined) result.push({ from_name: name, to_name: CONTROL.text, type: 'choices', value: { choices: flatten(record[name], 'choices') } });
  }
  if (record[CONTROL.otherId] !== undefined) result.push({ from_name: CONTROL.otherId, to_name: CONTROL.text, type: 'textarea', value: { text: flatten(record[CONTROL.otherId], 'text') } });
  const annotated = result.length > 0 || record.annotation_id !== undefined;
  return {
    taskId: idOf(record.id),
    data,
    annotations: annotated ? [{ id: idOf(record.annotation_id), cancelled: false, result, annotator: annotatorOf(record.annotator), annotatedAt: timeOf(record.updated_at ?? record.created_at) }] : [],
  };
}

/** `"A"`, `["A", "B"]`, `{choices: ["A", "B"]}` or a list of those → `["A", "B"]`; anything else is kept for the judge to refuse. */
function flatten(value: unknown, key: 'choices' | 'text'): unknown {
  const parts = Array.isArray(value) ? value : [value];
  const out: unknown[] = [];
  for (const part of parts) {
    if (typeof part === 'string') out.push(part);
    else if (typeof part === 'object' && part !== null && Array.isArray((part as Record<string, unknown>)[key])) out.push(...((part as Record<string, unknown>)[key] as unknown[]));
    else return value;
  }
  return out;
}
