import type { AcceptedLabel } from './annotation-judge.ts';

/**
 * The gold JSONL line of an accepted concept answer: the GoldMention fields plus what
 * `cuilink memory add --jsonl` reads (src/eval/memory-sources.ts: `text`, `label`, `ids`,
 * `source`, `time`, `noteId`, `mentionId`), so the file feeds the memory as it is; `stream` tells
 * learn from measure gold (the measure stream must not be learned: filter before `memory add`).
 */
export function goldLine(label: AcceptedLabel, source: string): Record<string, unknown> {
  const { gold } = label;
  return {
    noteId: gold.noteId,
    mentionId: gold.mentionId,
    ids: gold.ids,
    label: gold.label,
    start: gold.start,
    end: gold.end,
    text: label.text,
    stream: label.stream,
    annotator: label.annotator,
    annotatedAt: label.annotatedAt,
    source,
    time: label.annotatedAt,
  };
}

/**
 * A NIL answer's line: kept apart from the gold file because the memory cannot learn "no concept"
 * (memory add refuses an id-less line) and the memory updater would store one from the gold topic.
 */
export function nilLine(label: AcceptedLabel, source: string): Record<string, unknown> {
  const { gold } = label;
  return { noteId: gold.noteId, mentionId: gold.mentionId, nil: true, label: gold.label, start: gold.start, end: gold.end, text: label.text, stream: label.stream, annotator: label.annotator, annotatedAt: label.annotatedAt, source };
}
