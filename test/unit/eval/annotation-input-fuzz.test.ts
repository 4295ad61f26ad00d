import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { importLabelStudioExport, importPlainAnswers, type ImportResult } from '../../../src/eval/annotation/annotation-import.ts';
import { AnnotationJudge } from '../../../src/eval/annotation/annotation-judge.ts';
import { goldLine, nilLine } from '../../../src/eval/annotation/gold-line.ts';
import { writeJsonItems } from '../../../src/eval/annotation/json-output.ts';
import { readLabelRequestFile } from '../../../src/eval/annotation/label-request-file.ts';
import { buildLabelStudioTask } from '../../../src/eval/annotation/label-studio-task.ts';
import { readPubTatorNotes } from '../../../src/eval/annotation/note-text-source.ts';
import { buildPlainTaskLine } from '../../../src/eval/annotation/plain-task-line.ts';
import { formatRefusal, REFUSAL_KINDS } from '../../../src/eval/annotation/refusal.ts';
import { joinRequestsToNotes } from '../../../src/eval/annotation/request-note-join.ts';
import { TaskLedger } from '../../../src/eval/annotation/task-ledger.ts';
import { goldMentionToAvro } from '../../../src/eval/gold-avro.ts';
import { mentionKey } from '../../../src/eval/gold.ts';
import { loadIndexKb } from '../../../src/eval/kb-ontology-view.ts';
import { labelledMentionsFromJsonl } from '../../../src/eval/memory-sources.ts';
import type { ConceptStore } from '../../../src/kb/concept-store.ts';
import { parseJsonSafely } from '../../../src/kb/safe-json.ts';
import { PlainAvroCodec } from '../../../src/stream/avro/index.ts';
import { fuzzPlan, int, pick, guardedFuzzTest, type FuzzCase } from '../../support/guarded-fuzz.ts';
import { mutateBytes, mutateJson } from '../../support/input-mutations.ts';

// The product rule for what an operator brings back from annotators (docs/annotation.md): `cuilink
// annotate import` refuses a bad answer alone, with its line, task and reason (never note text),
// and keeps the others; a file that cannot be read at all is an InputError naming it. What it
// accepts is gold the rest of cuilink takes: an answer to a request the tasks file holds, at its
// span, with KB concept ids, one per request; its gold file is read by `cuilink memory add
// --jsonl` and its records are GoldMentions the gold topic takes. Seeded mutants of the Label
// Studio exports (JSON and JSON-MIN), of plain JSONL answers, of the tasks files (as `annotate
// export` writes them, then hand-edited or damaged) and of the label-request file `annotate export`
// reads (whose tasks the import must read back) go through the real readers: bytes truncated,
// flipped, invalid UTF-8, CR/CRLF, BOMs, huge lines; JSON with wrong types, `__proto__` keys,
// 1e400, nesting 100k deep, 100k items. A failure names seed, case and mutation; rerun it alone
// with CUILINK_FUZZ_SEED=<seed> CUILINK_FUZZ_CASES=<case + 1>.

const PLAN = fuzzPlan([20_261_206, 19, 7_301], 150);
const FIXTURES = 'test/fixtures/label-studio';
const EXPORTS = [`${FIXTURES}/export.json`, `${FIXTURES}/export-min.json`];
const REQUESTS = `${FIXTURES}/label-requests.jsonl`;
const CORPUS = 'test/fixtures/eval/sample.PubTator';
/** Words of the fixture notes: a refusal's reason that holds one has leaked note text. */
const NOTE_WORDS = /cancer|anemia|asthma|syndrome|arthropathy|patients/i;

/** Plain JSONL answers to the fixture's requests, one of each form. */
const PLAIN_ANSWERS: readonly Record<string, unknown>[] = [
  { noteId: '1001', mentionId: '0-12', conceptId: 'D003110', annotator: 'script', annotatedAt: 1_767_225_600_000 },
  { noteId: '1001', mentionId: '71-96', ids: ['MESH:D001943', 'MESH:D010051'], start: 71, end: 96, annotatedAt: '2026-02-01T00:00:00Z' },
  { noteId: '1002', mentionId: '39-55', nil: true, annotator: null },
  { noteId: '1001', mentionId: '63-69', ids: ['MESH:D000743'], start: 63, end: 69 },
];

interface Bases {
  kb: ConceptStore;
  /** The tasks files `annotate export` writes for the fixture requests: Label Studio tasks and plain JSONL. */
  tasksJson: string;
  tasksJsonl: string;
}

/** Built once per worker, before its cases: what annotate export writes for the fixture requests, and the index's KB. */
let bases: Bases;

async function loadBases(): Promise<Bases> {
  const joined = await exportedTasks(REQUESTS);
  return {
    kb: await loadIndexKb('test/fixtures/eval/index'),
    tasksJson: `[\n${joined.map((j) => JSON.stringify(buildLabelStudioTask(j))).join(',\n')}\n]\n`,
    tasksJsonl: `${joined.map((j) => JSON.stringify(buildPlainTaskLine(j))).join('\n')}\n`,
  };
}

/** `annotate export --requests FILE --corpus CORPUS`: the requests read and joined to their notes. */
async function exportedTasks(file: string) {
  const batch = await readLabelRequestFile(file);
  const notes = await readPubTatorNotes(CORPUS, new Set(batch.requests.map((r) => r.request.noteId)));
  return joinRequestsToNotes(batch.requests, notes.notes).joined;
}

/**
 * What an import's result must hold: refusals of a known kind whose reasons hold no note text;
 * accepted answers to requests of the ledger, at their spans, with KB primary ids, one per
 * request; a gold file `memory add --jsonl` reads whole and GoldMention records the gold topic takes.
 */
async function importProblem(result: ImportResult, ledger: TaskLedger, kb: ConceptStore, dir: string): Promise<string | undefined> {
  for (const refusal of result.refused) {
    if (!REFUSAL_KINDS.includes(refusal.kind)) return `a refusal of kind ${refusal.kind}`;
    if (NOTE_WORDS.test(formatRefusal(refusal))) return `note text in a refusal: ${formatRefusal(refusal).slice(0, 200)}`;
  }
  const requests = new Set<string>();
  for (const { gold, nil, text } of result.accepted) {
    const entry = ledger.get(gold.noteId, gold.mentionId);
    const key = mentionKey(gold.noteId, gold.mentionId);
    if (entry === undefined) return `accepted an answer to ${gold.noteId}/${gold.mentionId}, which no tasks file holds`;
    if (gold.start !== entry.start || gold.end !== entry.end) return `accepted ${gold.noteId}/${gold.mentionId} at [${gold.start}, ${gold.end}), the request is at [${entry.start}, ${entry.end})`;
    if (!(gold.start >= 0 && gold.end > gold.start && gold.end < 2 ** 31 && text.length === gold.end - gold.start)) return `accepted ${gold.noteId}/${gold.mentionId} at [${gold.start}, ${gold.end}) with ${text.length} characters of mention text: no span of a note`;
    if (nil !== (gold.ids.length === 0)) return `accepted ${gold.noteId}/${gold.mentionId}: nil ${nil} with ids ${gold.ids.join(', ')}`;
    if (gold.ids.some((id) => kb.resolveId(id) !== id)) return `accepted ids that are no KB primary id: ${gold.ids.join(', ').slice(0, 200)}`;
    if (requests.has(key)) return `two answers accepted for ${gold.noteId}/${gold.mentionId}`;
    requests.add(key);
  }
  const gold = result.accepted.filter((a) => !a.nil);
  const file = join(dir, 'gold.jsonl');
  await writeJsonItems(file, gold.map((g) => goldLine(g, 'label-studio')), 'lines');
  await writeJsonItems(join(dir, 'nil.jsonl'), result.accepted.filter((a) => a.nil).map((n) => nilLine(n, 'label-studio')), 'lines');
  try {
    const read = labelledMentionsFromJsonl(file);
    if (read.length !== gold.length) return `memory add reads ${read.length} of the ${gold.length} gold lines`;
  } catch (error) {
    return `memory add --jsonl refuses the gold file the import wrote: ${(error as Error).message.slice(0, 300)}`;
  }
  const codec = new PlainAvroCodec();
  for (const label of gold) {
    try {
      await codec.encode('GoldMention', goldMentionToAvro(label.gold, { annotator: label.annotator, annotatedAt: label.annotatedAt }));
    } catch (error) {
      return `--gold-topic cannot publish ${label.gold.noteId}/${label.gold.mentionId} (the import stops part way): ${(error as Error).message.slice(0, 300)}`;
    }
  }
  return undefined;
}

/** A JSON mutation of one element of a JSON array (the other elements whole), or of the whole. */
function mutateArray(random: () => number, text: string): { what: string; text: string } {
  const items = JSON.parse(text) as unknown[];
  if (random() < 0.4) return mutateJson(random, items);
  const at = int(random, items.length);
  const mutated = mutateJson(random, items[at]);
  return { what: `item ${at}: ${mutated.what}`, text: `[\n${items.map((item, i) => (i === at ? mutated.text : JSON.stringify(item))).join(',\n')}\n]\n` };
}

/** A JSON mutation of one JSON line of a JSON-lines text (the request fixture has lines that are none, on purpose). */
function mutateLine(random: () => number, text: string): { what: string; text: string } {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const json = lines.flatMap((line, i) => ('value' in parseJsonSafely(line) ? [i] : []));
  const at = pick(random, json);
  const mutated = mutateJson(random, JSON.parse(lines[at]!));
  lines[at] = mutated.text.replaceAll('\n', ' ');
  return { what: `line ${at + 1}: ${mutated.what}`, text: `${lines.join('\n')}\n` };
}

/** Bytes or structure mutated, written to `file`; what was done. */
function writeMutant(random: () => number, file: string, valid: string, structure: (random: () => number, text: string) => { what: string; text: string }): string {
  if (random() < 0.35) {
    const mutated = mutateBytes(random, Buffer.from(valid));
    writeFileSync(file, mutated.bytes);
    return mutated.what;
  }
  const mutated = structure(random, valid);
  writeFileSync(file, mutated.text);
  return mutated.what;
}

/** Values a hand edit leaves in a request's own fields: spans off by one, reversed, negative, past an Avro int or 2^53. */
const FIELD_VALUES: readonly unknown[] = [-1, 0, 1, 11, 13, 0.5, 2 ** 31, 2 ** 53 + 2, '', 'x', '12', null, [], 'measure', 'learn '];

/** One of a task's request fields (the ledger's truth) set to a value a hand edit leaves, written to `file`. */
function requestFieldMutant(random: () => number, file: string, valid: string, form: 'tasks.json' | 'tasks.jsonl'): string {
  const field = pick(random, ['start', 'end', 'surface', 'noteId', 'mentionId', 'stream', 'label'] as const);
  const value = pick(random, FIELD_VALUES);
  // The two forms name the mention text and the label differently (label-studio-task.ts, plain-task-line.ts).
  const names = form === 'tasks.json' ? { surface: 'surface', label: 'nerLabel' } : { surface: 'text', label: 'label' };
  const key = field === 'surface' || field === 'label' ? names[field] : field;
  const tasks = (form === 'tasks.json' ? JSON.parse(valid) : valid.trim().split('\n').map((l) => JSON.parse(l))) as Record<string, unknown>[];
  const at = int(random, tasks.length);
  const target = (form === 'tasks.json' ? tasks[at]!.data : tasks[at]) as Record<string, unknown>;
  target[key] = value;
  writeFileSync(file, form === 'tasks.json' ? JSON.stringify(tasks, null, 1) : jsonLines(tasks));
  return `task ${at + 1}: ${key} := ${JSON.stringify(value)}`;
}

const jsonLines = (items: readonly unknown[]) => `${items.map((i) => JSON.stringify(i)).join('\n')}\n`;

function buildCase(random: () => number, _index: number, dir: string): FuzzCase {
  const kind = pick(random, ['export', 'answers', 'tasks', 'requests'] as const);
  if (kind === 'export' || kind === 'answers') {
    const source = kind === 'export' ? pick(random, EXPORTS) : 'answers.jsonl';
    const file = join(dir, source.split('/').pop()!);
    const what = writeMutant(random, file, kind === 'export' ? readFileSync(source, 'utf8') : jsonLines(PLAIN_ANSWERS), kind === 'export' ? mutateArray : mutateLine);
    return {
      what: `${source}: ${what}`,
      file,
      codes: ['BAD_INPUT'],
      run: () => {
        const { kb, tasksJson } = bases;
        const ledger = new TaskLedger();
        ledger.addFile('tasks.json', tasksJson);
        // As the command reads it (readFileSync, utf8).
        const text = readFileSync(file, 'utf8');
        const judge = new AnnotationJudge(ledger, kb);
        return importProblem(kind === 'export' ? importLabelStudioExport(file, text, judge) : importPlainAnswers(text, judge), ledger, kb, dir);
      },
    };
  }
  if (kind === 'tasks') {
    const form = pick(random, ['tasks.json', 'tasks.jsonl'] as const);
    const file = join(dir, form);
    const valid = form === 'tasks.json' ? bases.tasksJson : bases.tasksJsonl;
    const what = random() < 0.3 ? requestFieldMutant(random, file, valid, form) : writeMutant(random, file, valid, form === 'tasks.json' ? mutateArray : mutateLine);
    // Plain answers name no span: what the tasks file says of a request is all the gold has.
    const source = random() < 0.5 ? 'answers.jsonl' : pick(random, EXPORTS);
    return {
      what: `${form}: ${what} (answers: ${source.split('/').pop()})`,
      file,
      codes: ['BAD_INPUT'],
      run: () => {
        const ledger = new TaskLedger();
        ledger.addFile(file, readFileSync(file, 'utf8'));
        const judge = new AnnotationJudge(ledger, bases.kb);
        const result = source === 'answers.jsonl' ? importPlainAnswers(jsonLines(PLAIN_ANSWERS.map((answer) => ({ ...answer, start: undefined, end: undefined }))), judge) : importLabelStudioExport(source, readFileSync(source, 'utf8'), judge);
        return importProblem(result, ledger, bases.kb, dir);
      },
    };
  }
  const file = join(dir, 'label-requests.jsonl');
  const what = writeMutant(random, file, readFileSync(REQUESTS, 'utf8'), mutateLine);
  return {
    what: `label-requests.jsonl: ${what}`,
    file,
    codes: ['INPUT_CORRUPT'],
    run: async () => {
      // What annotate export writes of the requests, the import's ledger must read back whole.
      const joined = await exportedTasks(file);
      const tasks = joined.map(buildLabelStudioTask);
      const ledger = new TaskLedger();
      try {
        ledger.addFile('tasks.json', JSON.stringify(tasks));
        ledger.addFile('tasks.jsonl', jsonLines(joined.map(buildPlainTaskLine)));
      } catch (error) {
        return `annotate import refuses the tasks annotate export wrote: ${(error as Error).message.slice(0, 300)}`;
      }
      return ledger.size === new Set(joined.map((j) => mentionKey(j.request.noteId, j.request.mentionId))).size ? undefined : `the ledger holds ${ledger.size} of ${joined.length} tasks`;
    },
  };
}

await guardedFuzzTest('mutated annotation exports, answers, tasks and request files are read, each bad part refused alone, and what is accepted is gold the memory and the gold topic take', new URL(import.meta.url), PLAN, buildCase, { prepare: async () => (bases = await loadBases()) });
