import type { ExportedAnnotation } from './label-studio-export.ts';
import { CONTROL, NIL_CHOICE } from './labeling-config.ts';
import { requestLabel } from './label-request-line.ts';
import { isObject } from '../../kb/safe-json.ts';
import { fromCodePointOffset } from './code-point-offsets.ts';
import { splitTypedIds, type SubmissionOrRefusal } from './submission.ts';

/**
 * Reads one Label Studio annotation of a cuilink task (labeling-config.ts): the request from the
 * task data, the span region, the ticked candidates, the NIL choice and the typed ids. Refuses
 * what cannot be an answer: a skipped annotation, no result, no span region or more than one, a
 * span without integer offsets, answers of the wrong type. Whether the answer is right for the
 * request is the judge's (annotation-judge.ts).
 */
export function readLabelStudioAnswer(data: Record<string, unknown>, annotation: ExportedAnnotation): SubmissionOrRefusal {
  const { noteId, mentionId } = data;
  if (typeof noteId !== 'string' || typeof mentionId !== 'string' || noteId === '' || mentionId === '') {
    return { kind: 'not-a-task', reason: 'no data.noteId / data.mentionId: not a task of cuilink annotate export' };
  }
  const request = `request ${requestLabel(noteId, mentionId)}`;
  if (annotation.cancelled) return { kind: 'cancelled', reason: `${request}: skipped in Label Studio (was_cancelled)` };
  if (!Array.isArray(annotation.result)) return { kind: 'not-a-task', reason: `${request}: no result list` };
  const regions = annotation.result.filter(isObject);
  const spans = regions.filter((r) => r.from_name === CONTROL.span && r.type === 'labels');
  if (spans.length === 0) return { kind: 'missing-span', reason: `${request}: no '${CONTROL.span}' region: the pre-annotated span was deleted (keep it; a wrong NER span is not gold for this request)` };
  if (spans.length > 1) return { kind: 'invalid-span', reason: `${request}: ${spans.length} '${CONTROL.span}' regions; the task asks about one mention` };
  const value = isObject(spans[0]!.value) ? spans[0]!.value : {};
  const start = value.start;
  const end = value.end;
  if (!Number.isInteger(start) || !Number.isInteger(end) || (start as number) < 0 || (end as number) <= (start as number)) {
    return { kind: 'invalid-span', reason: `${request}: the '${CONTROL.span}' region has no valid integer start/end` };
  }
  // Label Studio counts code points; the ledger, UTF-16 units. Without the note text the offsets are taken as they are (equal for text in the Basic Multilingual Plane).
  const text = typeof data.text === 'string' ? data.text : undefined;
  const spanStart = text === undefined ? (start as number) : fromCodePointOffset(text, start as number);
  const spanEnd = text === undefined ? (end as number) : fromCodePointOffset(text, end as number);
  if (spanStart === undefined || spanEnd === undefined) return { kind: 'invalid-span', reason: `${request}: the '${CONTROL.span}' region ends past the note` };
  const choices = answersOf(regions, CONTROL.concept, 'choices', 'choices');
  const none = answersOf(regions, CONTROL.none, 'choices', 'choices');
  const typed = answersOf(regions, CONTROL.otherId, 'textarea', 'text');
  for (const [name, answers] of [[CONTROL.concept, choices], [CONTROL.none, none], [CONTROL.otherId, typed]] as const) {
    if (answers === undefined) return { kind: 'not-a-task', reason: `${request}: the '${name}' answer is not a list of strings` };
  }
  const taskSpan = Number.isInteger(data.start) && Number.isInteger(data.end) ? { start: data.start as number, end: data.end as number } : undefined;
  return {
    submission: {
      noteId,
      mentionId,
      taskSpan,
      span: { start: spanStart, end: spanEnd },
      choices: choices!,
      typedIds: splitTypedIds(typed!),
      nil: none!.includes(NIL_CHOICE),
      annotator: annotation.annotator,
      annotatedAt: annotation.annotatedAt,
    },
  };
}

/** Every string answered by the control `name`; undefined when one of its regions is malformed. */
function answersOf(regions: Record<string, unknown>[], name: string, type: string, key: string): string[] | undefined {
  const out: string[] = [];
  for (const region of regions) {
    if (region.from_name !== name || region.type !== type) continue;
    const list = isObject(region.value) ? region.value[key] : undefined;
    if (!Array.isArray(list) || list.some((v) => typeof v !== 'string')) return undefined;
    out.push(...(list as string[]));
  }
  return out;
}
