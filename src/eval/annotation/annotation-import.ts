import type { AcceptedLabel, AnnotationJudge } from './annotation-judge.ts';
import { readLabelStudioAnswer } from './label-studio-answer.ts';
import { readLabelStudioExport } from './label-studio-export.ts';
import { readPlainAnswer } from './plain-annotation-line.ts';
import type { ImportRefusal } from './refusal.ts';
import { parseJsonSafely } from '../../kb/safe-json.ts';

export interface ImportResult {
  accepted: AcceptedLabel[];
  refused: ImportRefusal[];
  /** Tasks (Label Studio) or lines (JSONL) read. */
  tasks: number;
  /** Answers judged, refused ones included. */
  annotations: number;
  /** Tasks nobody has annotated yet: not an error (a project is exported while in progress). */
  unannotated: number;
}

function emptyResult(): ImportResult {
  return { accepted: [], refused: [], tasks: 0, annotations: 0, unannotated: 0 };
}

/**
 * A Label Studio export → accepted labels and refusals, each refusal for one task or annotation:
 * a bad one never takes the others of its task, or of the file, with it.
 */
export function importLabelStudioExport(file: string, text: string, judge: AnnotationJudge): ImportResult {
  const result = emptyResult();
  for (const task of readLabelStudioExport(file, text)) {
    result.tasks++;
    const refuse = (kind: ImportRefusal['kind'], reason: string) => result.refused.push({ line: task.line, task: task.taskId, kind, reason });
    if (task.data === undefined) {
      refuse('not-a-task', 'not a task (no data object)');
      continue;
    }
    if (task.annotations.length === 0) {
      result.unannotated++;
      continue;
    }
    for (const annotation of task.annotations) {
      result.annotations++;
      const named = (reason: string) => (annotation.id === undefined ? reason : `annotation ${annotation.id}: ${reason}`);
      const read = readLabelStudioAnswer(task.data, annotation);
      if ('reason' in read) {
        refuse(read.kind, named(read.reason));
        continue;
      }
      const where = [task.line === undefined ? undefined : `line ${task.line}`, task.taskId === undefined ? undefined : `task ${task.taskId}`, annotation.id === undefined ? undefined : `annotation ${annotation.id}`].filter((p) => p !== undefined).join(' / ');
      const verdict = judge.judge(read.submission, where);
      if ('accepted' in verdict) result.accepted.push(verdict.accepted);
      else refuse(verdict.kind, named(verdict.reason));
    }
  }
  return result;
}

/** Plain JSONL answers (plain-annotation-line.ts) → accepted labels and one refusal per bad line. */
export function importPlainAnswers(text: string, judge: AnnotationJudge): ImportResult {
  const result = emptyResult();
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  body.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    const line = i + 1;
    result.tasks++;
    result.annotations++;
    const refuse = (kind: ImportRefusal['kind'], reason: string) => result.refused.push({ line, task: undefined, kind, reason });
    const json = parseJsonSafely(raw);
    if ('reason' in json) return refuse('not-json', json.reason);
    const read = readPlainAnswer(json.value);
    if ('reason' in read) return refuse(read.kind, read.reason);
    const verdict = judge.judge(read.submission, `line ${line}`);
    if ('accepted' in verdict) result.accepted.push(verdict.accepted);
    else refuse(verdict.kind, verdict.reason);
  });
  return result;
}
