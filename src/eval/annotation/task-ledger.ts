import type { LabelRequestRecord } from '../../stream/avro/avro-records.ts';
import { InputError } from '../../kb/errors.ts';
import { mentionKey } from '../gold.ts';
import { topLevelElementLines } from './json-array-lines.ts';
import { requestLabel } from './label-request-line.ts';
import { isObject, parseJsonSafely } from '../../kb/safe-json.ts';

/** GoldMention's and LabelRequest's offsets are Avro ints. */
const MAX_AVRO_INT = 2 ** 31 - 1;

/** What the export asked about one mention: the import's truth, whatever an export file claims. */
export interface LedgerEntry extends Pick<LabelRequestRecord, 'noteId' | 'mentionId' | 'start' | 'end' | 'label' | 'stream'> {
  /** The candidate ids the task offered as choices. */
  candidateIds: ReadonlySet<string>;
  /** The mention's text: a gold JSONL line carries it for `cuilink memory add --jsonl`. */
  surface: string;
}

/**
 * The requests `cuilink annotate export` wrote, read back from its tasks files (the Label Studio
 * tasks JSON or the plain JSONL, told apart by the first character). An annotation whose request
 * is not here was never asked for and is refused. The ledger is cuilink's own output: a file that
 * does not parse is the wrong file, not a bad line to skip, so it is an InputError.
 */
export class TaskLedger {
  private readonly entries = new Map<string, LedgerEntry>();

  get size(): number {
    return this.entries.size;
  }

  get(noteId: string, mentionId: string): LedgerEntry | undefined {
    return this.entries.get(mentionKey(noteId, mentionId));
  }

  /** Adds the requests of one tasks file; the same request in two files must agree on its span. */
  addFile(file: string, text: string): void {
    const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    if (body.trimStart().startsWith('[')) this.addLabelStudioTasks(file, body);
    else this.addPlainLines(file, body);
  }

  private addLabelStudioTasks(file: string, text: string): void {
    const parsed = parseJsonSafely(text);
    if ('reason' in parsed || !Array.isArray(parsed.value)) throw new InputError(`${file}: not a tasks file of 'cuilink annotate export' (${'reason' in parsed ? parsed.reason : 'expected a JSON array'})`, 'BAD_INPUT');
    const lines = topLevelElementLines(text);
    parsed.value.forEach((task, i) => {
      const where = `${file}:${lines[i] ?? '?'}`;
      const data = isObject(task) && isObject(task.data) ? task.data : undefined;
      if (!data) throw new InputError(`${where}: a task without data`, 'BAD_INPUT');
      const candidates = Array.isArray(data.candidates) ? data.candidates.map((c) => (isObject(c) ? c.value : undefined)) : undefined;
      this.add(where, { ...data, label: data.nerLabel, candidateIds: candidates });
    });
  }

  private addPlainLines(file: string, text: string): void {
    text.split('\n').forEach((raw, i) => {
      if (raw.trim() === '') return;
      const where = `${file}:${i + 1}`;
      const parsed = parseJsonSafely(raw);
      if ('reason' in parsed || !isObject(parsed.value)) throw new InputError(`${where}: ${'reason' in parsed ? parsed.reason : 'not a JSON object'}`, 'BAD_INPUT');
      const line = parsed.value;
      const candidates = Array.isArray(line.candidates) ? line.candidates.map((c) => (isObject(c) ? c.conceptId : undefined)) : undefined;
      this.add(where, { ...line, surface: line.text, candidateIds: candidates });
    });
  }

  private add(where: string, v: Record<string, unknown>): void {
    const { noteId, mentionId, start, end, label, stream, surface, candidateIds } = v;
    if (typeof noteId !== 'string' || typeof mentionId !== 'string' || noteId === '' || mentionId === '') throw new InputError(`${where}: no noteId/mentionId: not a task of 'cuilink annotate export'`, 'BAD_INPUT');
    const id = requestLabel(noteId, mentionId);
    if (!Number.isInteger(start) || !Number.isInteger(end) || typeof label !== 'string' || (stream !== 'learn' && stream !== 'measure') || typeof surface !== 'string') {
      throw new InputError(`${where}: request ${id} lacks start, end, label, stream or mention text`, 'BAD_INPUT');
    }
    // The export writes the mention text as the note's text at the span: an edit that breaks this
    // (or a span an Avro int cannot hold) would become gold the gold topic or `memory add` refuses.
    const [from, to] = [start as number, end as number];
    if (from < 0 || to <= from || to > MAX_AVRO_INT || surface.length !== to - from) {
      throw new InputError(`${where}: request ${id}: span [${from}, ${to}) is not the span of its mention text (${surface.length} characters)`, 'BAD_INPUT');
    }
    if (!Array.isArray(candidateIds) || candidateIds.some((c) => typeof c !== 'string')) throw new InputError(`${where}: request ${id}: candidates are not a list of concept ids`, 'BAD_INPUT');
    const entry: LedgerEntry = { noteId, mentionId, start: from, end: to, label, stream, candidateIds: new Set(candidateIds as string[]), surface };
    const key = mentionKey(noteId, mentionId);
    const known = this.entries.get(key);
    if (known === undefined) {
      this.entries.set(key, entry);
      return;
    }
    if (known.start !== entry.start || known.end !== entry.end) {
      throw new InputError(`${where}: request ${id} was exported before with span [${known.start}, ${known.end}), here [${entry.start}, ${entry.end})`, 'BAD_INPUT');
    }
    // Exported again (a later linker may offer other candidates): either task's choices are valid.
    this.entries.set(key, { ...known, candidateIds: new Set([...known.candidateIds, ...entry.candidateIds]) });
  }
}
