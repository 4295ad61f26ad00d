import { toCodePointOffset } from './code-point-offsets.ts';
import { CONTROL, SPAN_LABEL } from './labeling-config.ts';
import { requestLabel } from './label-request-line.ts';
import type { JoinedRequest } from './request-note-join.ts';

/** One item of a Label Studio dynamic Choices list: `value` comes back in the export, `html` is shown. */
export interface CandidateChoice {
  value: string;
  html: string;
  hint: string;
}

/**
 * A task's `data` (Label Studio "Import tasks", JSON format): the note for the Text tag, the
 * candidates for the dynamic Choices, and the request's own fields, which the import reads back
 * to find the request (Label Studio assigns task ids of its own, so ours travel in the data).
 */
export interface LabelStudioTaskData {
  text: string;
  requestId: string;
  noteId: string;
  mentionId: string;
  start: number;
  end: number;
  surface: string;
  nerLabel: string;
  stream: 'learn' | 'measure';
  policy: string;
  priority: number;
  recurrence: number;
  candidates: CandidateChoice[];
  linkerConceptId: string | null;
  linkerConfidence: number | null;
  linkerVia: string | null;
  linkerNil: boolean;
  linkerVersion: string;
  modelVersion: string;
  indexVersion: string;
  memoryVersion: string | null;
  requestedAt: string;
}

/** A region of a Label Studio result (annotation or prediction). */
export interface LabelStudioRegion {
  id: string;
  from_name: string;
  to_name: string;
  type: string;
  value: Record<string, unknown>;
}

export interface LabelStudioTask {
  data: LabelStudioTaskData;
  predictions: { model_version: string; score?: number; result: LabelStudioRegion[] }[];
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Concept names are KB text, not markup: a name with `<` must show as written. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/**
 * The task of one request. The span is pre-annotated (a prediction with the span region, which
 * Label Studio copies into the annotation); the linker's concept is deliberately not pre-ticked,
 * so the annotator chooses rather than confirms (a pre-ticked answer anchors, and the measure
 * stream's gold must not lean toward the linker). Candidates keep the linker's order, best first;
 * a concept offered twice is listed once.
 */
export function buildLabelStudioTask(joined: JoinedRequest): LabelStudioTask {
  const { request: r, noteText, surface } = joined;
  const seen = new Set<string>();
  const candidates: CandidateChoice[] = [];
  for (const c of r.candidates) {
    if (seen.has(c.conceptId)) continue;
    seen.add(c.conceptId);
    candidates.push({ value: c.conceptId, html: `<b>${escapeHtml(c.name)}</b> · ${escapeHtml(c.conceptId)}`, hint: `linker score ${c.score.toFixed(3)}` });
  }
  // The region in code points, as Label Studio's Text tag reads it; the data's start/end stay cuilink's UTF-16 offsets.
  const region = { start: toCodePointOffset(noteText, r.start), end: toCodePointOffset(noteText, r.end) };
  const span: LabelStudioRegion = { id: 'span', from_name: CONTROL.span, to_name: CONTROL.text, type: 'labels', value: { ...region, text: surface, labels: [SPAN_LABEL] } };
  const prediction: LabelStudioTask['predictions'][number] = { model_version: `cuilink ${r.linkerVersion}`.trim(), result: [span] };
  // Label Studio sorts tasks by prediction score: the least sure first when an annotator asks for it.
  if (r.confidence !== null) prediction.score = r.confidence;
  return {
    data: {
      text: noteText,
      requestId: requestLabel(r.noteId, r.mentionId),
      noteId: r.noteId,
      mentionId: r.mentionId,
      start: r.start,
      end: r.end,
      surface,
      nerLabel: r.label,
      stream: r.stream,
      policy: r.policy,
      priority: r.priority,
      recurrence: r.recurrence,
      candidates,
      linkerConceptId: r.conceptId,
      linkerConfidence: r.confidence,
      linkerVia: r.via,
      linkerNil: r.nil,
      linkerVersion: r.linkerVersion,
      modelVersion: r.modelVersion,
      indexVersion: r.indexVersion,
      memoryVersion: r.memoryVersion,
      requestedAt: new Date(r.requestedAt).toISOString(),
    },
    predictions: [prediction],
  };
}
