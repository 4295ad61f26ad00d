import { InputError } from '../../kb/errors.ts';
import { topLevelElementLines } from './json-array-lines.ts';
import { jsonMinRecordToTask } from './json-min-record.ts';
import { isObject, parseJsonSafely } from '../../kb/safe-json.ts';
import { annotatorOf, idOf, timeOf } from './export-fields.ts';

/** One annotation of an exported task, as the import judges it. */
export interface ExportedAnnotation {
  id: string | undefined;
  /** Label Studio's "skip" (`was_cancelled`): the annotator declined to answer. */
  cancelled: boolean;
  /** `result`: the regions, in the JSON export's form. */
  result: unknown;
  annotator: string | null;
  annotatedAt: number | undefined;
}

export interface ExportedTask {
  line: number | undefined;
  /** Label Studio's own task id (ours is in the data). */
  taskId: string | undefined;
  /** Undefined when the element is not an object with a data object. */
  data: Record<string, unknown> | undefined;
  annotations: ExportedAnnotation[];
}

/**
 * A Label Studio export ("Export" → JSON, or JSON-MIN): one JSON array of tasks. The JSON form
 * is `{id, data, annotations: [{id, result: [regions], was_cancelled, completed_by, updated_at}],
 * predictions}`; a JSON-MIN record is one annotation with the data fields and each control's
 * answer side by side (src/eval/annotation/json-min-record.ts); each element is read as whichever
 * form it has. Not an array at all is an InputError: nothing in it can be trusted.
 */
export function readLabelStudioExport(file: string, text: string): ExportedTask[] {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const parsed = parseJsonSafely(body);
  if ('reason' in parsed) throw new InputError(`${file}: ${parsed.reason}: not a Label Studio JSON export`, 'BAD_INPUT');
  if (!Array.isArray(parsed.value)) throw new InputError(`${file}: not a Label Studio JSON export (expected a JSON array of tasks)`, 'BAD_INPUT');
  const lines = topLevelElementLines(body);
  return parsed.value.map((element, i) => {
    const line = lines[i];
    if (!isObject(element)) return { line, taskId: undefined, data: undefined, annotations: [] };
    if (!('data' in element) && !('annotations' in element)) return { ...jsonMinRecordToTask(element), line };
    return {
      line,
      taskId: idOf(element.id),
      data: isObject(element.data) ? element.data : undefined,
      annotations: Array.isArray(element.annotations) ? element.annotations.map(annotationOf) : [],
    };
  });
}

function annotationOf(raw: unknown): ExportedAnnotation {
  if (!isObject(raw)) return { id: undefined, cancelled: false, result: undefined, annotator: null, annotatedAt: undefined };
  return { id: idOf(raw.id), cancelled: raw.was_cancelled === true, result: raw.result, annotator: annotatorOf(raw.completed_by), annotatedAt: timeOf(raw.updated_at ?? raw.created_at) };
}
