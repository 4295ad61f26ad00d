import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readLabelRequestFile } from '../../../src/eval/annotation/label-request-file.ts';
import { readPubTatorNotes } from '../../../src/eval/annotation/note-text-source.ts';
import { joinRequestsToNotes, type JoinedRequest } from '../../../src/eval/annotation/request-note-join.ts';
import { buildLabelStudioTask } from '../../../src/eval/annotation/label-studio-task.ts';
import { buildPlainTaskLine } from '../../../src/eval/annotation/plain-task-line.ts';
import { TaskLedger } from '../../../src/eval/annotation/task-ledger.ts';
import { AnnotationJudge, type AcceptedLabel } from '../../../src/eval/annotation/annotation-judge.ts';
import { importLabelStudioExport, importPlainAnswers } from '../../../src/eval/annotation/annotation-import.ts';
import { readLabelStudioExport } from '../../../src/eval/annotation/label-studio-export.ts';
import { formatRefusal } from '../../../src/eval/annotation/refusal.ts';
import { loadIndexKb } from '../../../src/eval/kb-ontology-view.ts';
import type { ConceptStore } from '../../../src/kb/concept-store.ts';

// The ledger is what `annotate export` writes for the request fixture; the Label Studio exports
// (test/fixtures/label-studio/export*.json) are hand-written in the format of Label Studio's
// "Export" (JSON: tasks with annotations[].result[] regions; JSON-MIN: one flat record per
// annotation) for those tasks, with good answers and one of each bad case.
const EXPORT = 'test/fixtures/label-studio/export.json';
const EXPORT_MIN = 'test/fixtures/label-studio/export-min.json';
let joined: JoinedRequest[];
let kb: ConceptStore;
let tasksJson: string;

before(async () => {
  const batch = await readLabelRequestFile('test/fixtures/label-studio/label-requests.jsonl');
  const notes = await readPubTatorNotes('test/fixtures/eval/sample.PubTator', new Set(batch.requests.map((r) => r.request.noteId)));
  joined = joinRequestsToNotes(batch.requests, notes.notes).joined;
  tasksJson = `[\n${joined.map((j) => JSON.stringify(buildLabelStudioTask(j))).join(',\n')}\n]\n`;
  kb = await loadIndexKb('test/fixtures/eval/index');
});

function judge(): AnnotationJudge {
  const ledger = new TaskLedger();
  ledger.addFile('tasks.json', tasksJson);
  return new AnnotationJudge(ledger, kb, { now: () => 42 });
}

const summary = (a: AcceptedLabel) => `${a.gold.noteId}/${a.gold.mentionId} ${a.nil ? 'NIL' : a.gold.ids.join('+')} ${a.stream} ${a.annotator}`;

test('the Label Studio JSON export: good answers become gold, each bad one is refused alone with its line, task and reason', () => {
  const result = importLabelStudioExport(EXPORT, readFileSync(EXPORT, 'utf8'), judge());
  assert.deepEqual(result.accepted.map(summary), [
    '1001/0-12 MESH:D003110 learn label-studio-user:3',
    '1001/63-69 MESH:D000743 learn coder2@example.org',
    '1001/71-96 MESH:D001943+MESH:D010051 measure label-studio-user:3',
    '1002/39-55 NIL learn label-studio-user:3',
    '1002/0-22 MESH:D009794+MESH:D007592 learn label-studio-user:4',
  ]);
  const composite = result.accepted[2]!;
  assert.deepEqual(composite.gold, { noteId: '1001', mentionId: '71-96', ids: ['MESH:D001943', 'MESH:D010051'], label: 'CompositeMention', start: 71, end: 96 });
  assert.equal(composite.text, 'Breast and ovarian cancer');
  assert.equal(composite.annotatedAt, Date.parse('2026-01-05T10:12:03.412002Z'));
  assert.deepEqual(result.accepted[3]!.gold.ids, [], 'NIL: no ids');
  assert.deepEqual(
    result.refused.map((r) => [r.line, r.task, r.kind]),
    [
      [234, '103', 'duplicate'],
      [504, '105', 'missing-span'],
      [593, '106', 'unknown-concept'],
      [593, '106', 'not-a-candidate'],
      [753, '107', 'unknown-request'],
      [857, '108', 'cancelled'],
      [1042, '110', 'span-mismatch'],
      [1146, '111', 'nil-conflict'],
      [1267, '112', 'duplicate'],
      [1376, '113', 'no-answer'],
    ],
  );
  const reasons = result.refused.map(formatRefusal);
  assert.equal(reasons[0], 'line 234 / task 103: annotation 12: request 1001/71-96: annotated again; the first answer (line 234 / task 103 / annotation 11) is kept, this one differs (MESH:D001943 against MESH:D001943, MESH:D010051)');
  assert.match(reasons[1]!, /^line 504 \/ task 105: annotation 15: request 1003\/12-18: no 'span' region/);
  assert.equal(reasons[2], "line 593 / task 106: annotation 16: request 1001/17-30: unknown concept id 'MESH:D999999' (not in the index's KB)");
  assert.equal(reasons[3], "line 593 / task 106: annotation 17: request 1001/17-30: choice 'MESH:D000740' is not one of the task's candidates");
  assert.equal(reasons[4], 'line 753 / task 107: annotation 18: request 1004/0-7: never exported (in no tasks file given)');
  assert.equal(reasons[5], 'line 857 / task 108: annotation 19: request 1002/0-22: skipped in Label Studio (was_cancelled)');
  assert.match(reasons[6]!, /^line 1042 \/ task 110: annotation 21: request 1003\/12-18: the annotated span \[11, 18\) is not the requested \[12, 18\)/);
  assert.equal(reasons[7], "line 1146 / task 111: annotation 22: request 1001/0-12: 'none of these / NIL' together with concept MESH:D003110");
  assert.match(reasons[8]!, /request 1001\/63-69: annotated again; the first answer \(line 111 \/ task 102 \/ annotation 2\) is kept, this one agrees$/);
  assert.match(reasons[9]!, /request 1001\/17-30: no answer/);
  for (const reason of reasons) assert.doesNotMatch(reason, /cancer|anemia|asthma|syndrome|arthropathy/i, 'no note text in a reason');
  assert.deepEqual([result.tasks, result.annotations, result.unannotated], [13, 15, 1]);
});

test('the JSON-MIN export reads the same: flat answers beside the data, bare single choices', () => {
  const result = importLabelStudioExport(EXPORT_MIN, readFileSync(EXPORT_MIN, 'utf8'), judge());
  assert.deepEqual(result.accepted.map(summary), [
    '1001/0-12 MESH:D003110 learn coder1@example.org',
    '1001/71-96 MESH:D001943+MESH:D010051 measure coder1@example.org',
    '1002/39-55 NIL learn coder1@example.org',
  ]);
  assert.deepEqual(result.refused.map((r) => [r.task, r.kind]), [['105', 'missing-span'], ['106', 'unknown-concept']]);
  assert.ok(result.refused.every((r) => r.line !== undefined && r.line > 1));
});

test('answers in the order given: a refused answer leaves its request free for a later valid one', () => {
  const ls = (id: number, data: Record<string, unknown>, result: unknown[], extra: Record<string, unknown> = {}) => ({ id, data, annotations: [{ id: id * 10, completed_by: 1, result, ...extra }] });
  const data = JSON.parse(tasksJson)[0].data;
  const span = (start: number, end: number) => ({ from_name: 'span', to_name: 'text', type: 'labels', value: { start, end, labels: ['Mention'] } });
  const choose = (...ids: string[]) => ({ from_name: 'concept', to_name: 'text', type: 'choices', value: { choices: ids } });
  const typed = (text: string) => ({ from_name: 'other_id', to_name: 'text', type: 'textarea', value: { text: [text] } });
  const tasks = [
    'not a task',
    { id: 2, annotations: [] },
    ls(3, { ...data, start: 1 }, [span(0, 12), choose('MESH:D003110')]),
    ls(4, data, [span(0, 12), span(0, 12), choose('MESH:D003110')]),
    ls(5, data, [{ ...span(0, 12), value: { start: '0', end: 12 } }, choose('MESH:D003110')]),
    ls(6, data, [span(0, 12), { ...choose(), value: { choices: 'MESH:D003110' } }]),
    ls(7, data, [span(0, 12), typed('colon cancer of the patient')]),
    ls(8, { ...data, noteId: undefined }, [span(0, 12), choose('MESH:D003110')]),
    ls(9, data, [span(0, 12), typed('D015179')]),
    ls(10, data, [span(0, 12), choose('MESH:D003110')]),
    { id: 11, data, annotations: [] },
  ];
  const result = importLabelStudioExport('x.json', JSON.stringify(tasks, null, 1), judge());
  assert.deepEqual(result.refused.map((r) => `${r.task} ${r.kind}`), ['undefined not-a-task', '2 not-a-task', '3 span-mismatch', '4 invalid-span', '5 invalid-span', '6 not-a-task', '7 unknown-concept', '8 not-a-task', '10 duplicate']);
  assert.match(result.refused[2]!.reason, /the task data's span \[1, 12\) is not the exported \[0, 12\)/);
  assert.match(result.refused[5]!.reason, /'concept' answer is not a list of strings/);
  assert.match(result.refused[6]!.reason, /unknown concept id a value that is not an id \(27 characters, not shown\)/);
  assert.doesNotMatch(result.refused[6]!.reason, /colon/);
  assert.deepEqual(result.accepted.map(summary), ['1001/0-12 MESH:D003110 learn label-studio-user:1'], 'an alt id typed is stored as its primary id');
  assert.equal(result.accepted[0]!.annotatedAt, 42, 'no time in the export: the import time');
  assert.equal(result.unannotated, 1);
});

test('plain JSONL answers: ids or conceptId, NIL said explicitly, offsets checked when given, one refusal per bad line', () => {
  const lines = [
    { noteId: '1001', mentionId: '0-12', conceptId: 'D003110', annotator: 'script' },
    { noteId: '1001', mentionId: '71-96', ids: ['MESH:D001943', 'MESH:D010051'], start: 71, end: 96, annotatedAt: '2026-02-01T00:00:00Z' },
    { noteId: '1002', mentionId: '39-55', nil: true },
    { noteId: '1003', mentionId: '12-18', ids: [] },
    'not json {',
    { noteId: '1001', mentionId: '63-69', ids: ['MESH:D000740'], start: 62, end: 69 },
    { noteId: '1001', mentionId: '17-30', conceptId: 'MESH:D000000' },
    { noteId: '1001', mentionId: '17-30', ids: 'MESH:D001943' },
    { noteId: '1002', mentionId: '0-22', conceptId: 'NIL', ids: ['MESH:D009794'] },
    { noteId: '1001', mentionId: '0-12', conceptId: 'MESH:D009369' },
    { noteId: '1002', mentionId: '0-22', conceptId: 'MESH:D009794|MESH:D007592', start: 0 },
  ];
  const text = lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n');
  const result = importPlainAnswers(`${text}\n\n`, judge());
  assert.deepEqual(result.accepted.map(summary), ['1001/0-12 MESH:D003110 learn script', '1001/71-96 MESH:D001943+MESH:D010051 measure null', '1002/39-55 NIL learn null']);
  assert.equal(result.accepted[1]!.annotatedAt, Date.UTC(2026, 1, 1));
  assert.deepEqual(result.refused.map((r) => `${formatRefusal(r).split(':')[0]} ${r.kind}`), ['line 4 no-answer', 'line 5 not-json', 'line 6 span-mismatch', 'line 7 unknown-concept', 'line 8 not-a-task', 'line 9 nil-conflict', 'line 10 duplicate', 'line 11 invalid-span']);
  assert.match(result.refused[4]!.reason, /field 'ids': Expected array, received string/);
  assert.match(result.refused[6]!.reason, /this one differs \(MESH:D009369 against MESH:D003110\)/);
  assert.deepEqual([result.tasks, result.annotations], [11, 11]);
});

test('the ledger reads either tasks form; an answer to a request of neither is unknown; a bad or conflicting ledger is an error', () => {
  const plain = joined.map((j) => JSON.stringify(buildPlainTaskLine(j))).join('\n');
  const fromPlain = new TaskLedger();
  fromPlain.addFile('tasks.jsonl', plain);
  const fromTasks = new TaskLedger();
  fromTasks.addFile('tasks.json', tasksJson);
  assert.equal(fromPlain.size, 7);
  for (const j of joined) assert.deepEqual(fromPlain.get(j.request.noteId, j.request.mentionId), fromTasks.get(j.request.noteId, j.request.mentionId));
  assert.deepEqual([...fromTasks.get('1001', '71-96')!.candidateIds], ['MESH:D001943', 'MESH:D010051', 'MESH:D009371']);
  assert.equal(fromTasks.get('1001', '46-58'), undefined);

  const moved = JSON.stringify({ ...buildPlainTaskLine(joined[0]!), start: 1, end: 13 });
  assert.throws(() => fromTasks.addFile('again.jsonl', moved), /again\.jsonl:1: request 1001\/0-12 was exported before with span \[0, 12\), here \[1, 13\)/);
  const more = JSON.stringify({ ...buildPlainTaskLine(joined[0]!), candidates: [{ conceptId: 'MESH:D000740', name: 'Anemia', score: 0.1 }] });
  fromTasks.addFile('later.jsonl', more);
  assert.ok(fromTasks.get('1001', '0-12')!.candidateIds.has('MESH:D000740'), 'a request exported twice offers both exports’ candidates');
  assert.throws(() => new TaskLedger().addFile('x.json', '[{"id": 1}]'), /x\.json:1: a task without data/);
  assert.throws(() => new TaskLedger().addFile('x.jsonl', '{"noteId": "1"}\nPatient notes'), /x\.jsonl:1: no noteId\/mentionId/);
  assert.throws(() => new TaskLedger().addFile('x.jsonl', 'Patient notes'), (e: Error) => /x\.jsonl:1: not JSON/.test(e.message) && !/Patient/.test(e.message));
});

test('an export that is not a JSON array of tasks is an error that quotes none of it', () => {
  assert.throws(() => readLabelStudioExport('e.json', '{"id": 1}'), /e\.json: not a Label Studio JSON export \(expected a JSON array of tasks\)/);
  assert.throws(() => readLabelStudioExport('e.json', 'Patient has a cough'), (e: Error) => /e\.json: not JSON/.test(e.message) && !/Patient/.test(e.message));
  assert.deepEqual(readLabelStudioExport('e.json', '\ufeff[]'), []);
});

test('a note with characters outside the Basic Multilingual Plane: the region is exported in code points, as Label Studio counts, and read back in UTF-16 units', async () => {
  const { readLabelStudioAnswer } = await import('../../../src/eval/annotation/label-studio-answer.ts');
  const base = joined[0]!;
  const prefix = '🐱 𝛽-blocker note: '; // two astral characters: UTF-16 counts each twice
  const shift = prefix.length;
  const request = { ...base.request, start: base.request.start + shift, end: base.request.end + shift };
  const task = buildLabelStudioTask({ ...base, request, noteText: prefix + base.noteText });
  const region = task.predictions[0]!.result[0]!;
  assert.deepEqual([region.value.start, region.value.end], [request.start - 2, request.end - 2], 'code points: two fewer than UTF-16 units');
  assert.deepEqual([task.data.start, task.data.end], [request.start, request.end], 'the data keeps cuilink\'s offsets');
  assert.equal([...task.data.text].slice(region.value.start as number, region.value.end as number).join(''), base.surface, 'the region covers the mention when counted in code points');
  const candidate = task.data.candidates[0]!.value;
  const answer = readLabelStudioAnswer(task.data as unknown as Record<string, unknown>, { result: [region, { from_name: 'concept', to_name: 'text', type: 'choices', value: { choices: [candidate] } }], cancelled: false } as never);
  assert.ok('submission' in answer, JSON.stringify(answer));
  assert.deepEqual(answer.submission.span, { start: request.start, end: request.end });
  assert.deepEqual(answer.submission.taskSpan, { start: request.start, end: request.end });
});

test('a JSON-MIN record of a note with characters outside the Basic Multilingual Plane: its data text is kept, so the code-point region reads back as the requested span', () => {
  const base = joined[0]!;
  const prefix = '🐱 𝛽-blocker note: ';
  const shift = prefix.length;
  const request = { ...base.request, start: base.request.start + shift, end: base.request.end + shift };
  const task = buildLabelStudioTask({ ...base, request, noteText: prefix + base.noteText });
  const ledger = new TaskLedger();
  ledger.addFile('tasks.json', JSON.stringify([task]));
  const region = task.predictions[0]!.result[0]!.value;
  // JSON-MIN: the task data's fields, Label Studio's meta keys and each control's answer side by side.
  const record = { ...task.data, id: 7, annotator: 'coder1@example.org', annotation_id: 70, updated_at: '2026-01-05T10:10:03Z', span: [region], concept: task.data.candidates[0]!.value };
  const result = importLabelStudioExport('min.json', JSON.stringify([record]), new AnnotationJudge(ledger, kb, { now: () => 42 }));
  assert.deepEqual(result.refused.map((r) => `${r.kind}: ${r.reason}`), []);
  assert.deepEqual(result.accepted.map((a) => [a.gold.start, a.gold.end]), [[request.start, request.end]]);
});

test('an answer time that is no epoch-ms time the memory and the gold topic take: a plain line is refused naming the field, an export\'s falls back to the import time', async () => {
  // Before, the import accepted each: -1 and 1.5 went into the gold file as `time`, which `memory
  // add --jsonl` refuses (the whole file), and 2^53 + 2 was no Avro long: --gold-topic stopped part way.
  const times = [-1, 1.5, 2 ** 53 + 2, 1e300, '1900-01-01T00:00:00Z', 'yesterday'];
  const lines = times.map((annotatedAt) => JSON.stringify({ noteId: '1001', mentionId: '0-12', conceptId: 'D003110', annotatedAt }));
  const plain = importPlainAnswers(lines.join('\n'), judge());
  assert.deepEqual(plain.accepted, []);
  assert.deepEqual(plain.refused.map((r) => [r.line, r.kind, /field 'annotatedAt'/.test(r.reason)]), times.map((_, i) => [i + 1, 'not-a-task', true]));
  const data = JSON.parse(tasksJson)[0].data;
  const span = { from_name: 'span', to_name: 'text', type: 'labels', value: { start: 0, end: 12, labels: ['Mention'] } };
  const choose = { from_name: 'concept', to_name: 'text', type: 'choices', value: { choices: ['MESH:D003110'] } };
  for (const updatedAt of times) {
    const exported = importLabelStudioExport('x.json', JSON.stringify([{ id: 1, data, annotations: [{ id: 10, result: [span, choose], updated_at: updatedAt }] }]), judge());
    assert.deepEqual(exported.accepted.map((a) => a.annotatedAt), [42], `updated_at ${updatedAt}: the import time`);
  }
});

test('a tasks file edited to a span no gold can hold is refused naming its line, not imported into gold the gold topic or the memory refuses', () => {
  // Before, each was taken as the request: a plain answer (no offsets of its own) then gave gold
  // at [-1, 12), [12, 0) or up to 2^53 + 2 (no Avro int: --gold-topic stopped part way), or with
  // empty text (`memory add --jsonl` refuses the whole gold file).
  const edits: [Record<string, unknown>, RegExp][] = [
    [{ start: -1 }, /span \[-1, 12\)/],
    [{ start: 12, end: 0 }, /span \[12, 0\)/],
    [{ start: 2 ** 53 - 10, end: 2 ** 53 + 2 }, /span \[9007199254740982, 9007199254740994\)/],
    [{ text: '' }, /span \[0, 12\) is not the span of its mention text \(0 characters\)/],
    [{ text: 'Colon' }, /span \[0, 12\) is not the span of its mention text \(5 characters\)/],
  ];
  for (const [edit, reason] of edits) {
    const lines = joined.map((j) => buildPlainTaskLine(j)).map((l) => (l.requestId === '1001/0-12' ? { ...l, ...edit } : l));
    const at = lines.findIndex((l) => l.requestId === '1001/0-12') + 1;
    assert.throws(
      () => new TaskLedger().addFile('edited.jsonl', lines.map((l) => JSON.stringify(l)).join('\n')),
      (e: Error & { code?: string }) => e.code === 'BAD_INPUT' && e.message.startsWith(`edited.jsonl:${at}: request 1001/0-12: `) && reason.test(e.message),
      JSON.stringify(edit),
    );
  }
});
