import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseLabelRequest } from '../../../src/eval/annotation/label-request-line.ts';
import { readLabelRequestFile } from '../../../src/eval/annotation/label-request-file.ts';
import { readNoteJsonl, readPubTatorNotes } from '../../../src/eval/annotation/note-text-source.ts';
import { joinRequestsToNotes } from '../../../src/eval/annotation/request-note-join.ts';
import { buildLabelStudioTask, escapeHtml } from '../../../src/eval/annotation/label-studio-task.ts';
import { buildPlainTaskLine } from '../../../src/eval/annotation/plain-task-line.ts';
import { CONTROL, LABELING_CONFIG, NIL_CHOICE, SPAN_LABEL } from '../../../src/eval/annotation/labeling-config.ts';
import { topLevelElementLines } from '../../../src/eval/annotation/json-array-lines.ts';
import { writeJsonItems } from '../../../src/eval/annotation/json-output.ts';
import type { LabelRequestRecord } from '../../../src/stream/avro/avro-records.ts';

const REQUESTS = 'test/fixtures/label-studio/label-requests.jsonl';
const CORPUS = 'test/fixtures/eval/sample.PubTator';
const NOTE_1001 = 'Colon cancer and breast cancer. Patients with colon cancer had anemia. Breast and ovarian cancer were rare.';

function request(overrides: Partial<LabelRequestRecord> = {}): LabelRequestRecord {
  const parsed = parseLabelRequest({ noteId: 'n1', mentionId: 'm1', start: 0, end: 5, label: 'Disease', stream: 'learn', ...overrides });
  assert.ok('request' in parsed, JSON.stringify(parsed));
  return parsed.request;
}

test('a LabelRequest JSON line: defaults for the optional fields, the field and reason for a bad one', () => {
  const r = request();
  assert.deepEqual([r.conceptId, r.confidence, r.candidates, r.memoryVersion, r.nil, r.requestedAt], [null, null, [], null, false, 0]);
  assert.equal(request({ requestedAt: '2026-01-01T00:00:00Z' as never }).requestedAt, Date.UTC(2026, 0, 1));
  assert.deepEqual(parseLabelRequest({ noteId: 'n1', start: 0, end: 5, label: 'x', stream: 'learn' }), { reason: "not a LabelRequest: field 'mentionId': Required" });
  assert.deepEqual(parseLabelRequest({ noteId: 'n1', mentionId: 'm', start: 5, end: 5, label: 'x', stream: 'learn' }), { reason: 'empty or reversed span [5, 5)' });
  assert.match((parseLabelRequest({ noteId: 'n1', mentionId: 'm', start: 0, end: 5, label: 'x', stream: 'learn', candidates: [{ conceptId: 'A', name: 'a' }] }) as { reason: string }).reason, /field 'candidates\.0\.score'/);
});

test('the request file: each bad line refused with its number, the others kept; a not-JSON reason quotes no text', async () => {
  const batch = await readLabelRequestFile(REQUESTS);
  assert.equal(batch.requests.length, 11);
  assert.deepEqual(batch.refused.map((r) => r.where), ['line 6', 'line 11']);
  assert.match(batch.refused[0]!.reason, /field 'stream'/);
  assert.equal(batch.refused[1]!.reason, 'not JSON');
  assert.doesNotMatch(batch.refused[1]!.reason, /Aspirin/);
});

test('requests join their notes; a missing note, a span outside it or unlike its mention, and a repeat are refused', async () => {
  const batch = await readLabelRequestFile(REQUESTS);
  const notes = await readPubTatorNotes(CORPUS, new Set(batch.requests.map((r) => r.request.noteId)));
  assert.deepEqual([...notes.notes.keys()].sort(), ['1001', '1002', '1003'], 'only the wanted notes, each once');
  const { joined, refused } = joinRequestsToNotes(batch.requests, notes.notes);
  assert.deepEqual(
    joined.map((j) => `${j.request.noteId}/${j.request.mentionId}=${j.surface}`),
    ['1001/0-12=Colon cancer', '1001/63-69=anemia', '1001/71-96=Breast and ovarian cancer', '1002/39-55=unknown syndrome', '1003/12-18=asthma', '1001/17-30=breast cancer', '1002/0-22=Ochronotic arthropathy'],
  );
  assert.deepEqual(
    refused.map((r) => `${r.where}: ${r.reason}`),
    [
      'line 5: request 9999/0-5: its note is not in the notes source',
      'line 10: request 1003/12-18: duplicate request (first at line 7)',
      'line 12: request 1003/30-80: span [30, 80) is outside the note (length 33)',
      "line 13: request 1001/46-58: span [45, 58) differs from the note's mention 46-58 at [46, 58)",
    ],
  );
  assert.equal(joined[0]!.noteText, NOTE_1001);
});

test('notes JSONL as cuilink link reads it: a bad line is refused by number, with no note text in the reason', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-annotate-notes-'));
  try {
    const file = join(dir, 'notes.jsonl');
    const good = { noteId: 'n1', text: 'Seizures and fever.', mentions: [{ id: 'a', start: 0, end: 8, text: 'Seizures', label: 'Phenotype' }] };
    writeFileSync(file, `${JSON.stringify(good)}\nSeizures were noted\n${JSON.stringify({ noteId: 'n2', text: 'x', mentions: [{ id: 'a', start: 0, end: 1, text: 'y', label: 'L' }] })}\n${JSON.stringify({ ...good, noteId: 'other' })}\n`);
    const notes = await readNoteJsonl(file, new Set(['n1', 'n2']));
    assert.deepEqual([...notes.notes.keys()], ['n1']);
    assert.deepEqual(notes.notes.get('n1')!.spans.get('a'), { start: 0, end: 8 });
    assert.deepEqual(notes.refused.map((r) => r.where), ['notes line 2', 'notes line 3']);
    for (const r of notes.refused) assert.doesNotMatch(r.reason, /Seizures|were noted/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a Label Studio task: the note, the span pre-annotated, the candidates as dynamic choices, the request in its data', () => {
  const r = request({ noteId: '1001', mentionId: '0-12', start: 0, end: 12, conceptId: 'MESH:D003110', confidence: 0.55, candidates: [
    { conceptId: 'MESH:D003110', name: 'Colonic <Neoplasms> & "Tumours"', score: 0.62 },
    { conceptId: 'MESH:D009369', name: 'Neoplasms', score: 0.41 },
    { conceptId: 'MESH:D003110', name: 'Colonic Neoplasms', score: 0.3 },
  ] });
  const task = buildLabelStudioTask({ request: r, noteText: NOTE_1001, surface: 'Colon cancer' });
  assert.equal(task.data.text, NOTE_1001);
  assert.deepEqual([task.data.requestId, task.data.noteId, task.data.mentionId, task.data.start, task.data.end, task.data.surface, task.data.nerLabel, task.data.stream], ['1001/0-12', '1001', '0-12', 0, 12, 'Colon cancer', 'Disease', 'learn']);
  assert.deepEqual(task.data.candidates.map((c) => c.value), ['MESH:D003110', 'MESH:D009369'], 'best first, a concept offered twice listed once');
  assert.equal(task.data.candidates[0]!.html, '<b>Colonic &lt;Neoplasms&gt; &amp; &quot;Tumours&quot;</b> · MESH:D003110');
  assert.equal(task.data.candidates[0]!.hint, 'linker score 0.620');
  assert.ok(!task.data.candidates.some((c) => c.value === NIL_CHOICE), 'NIL is its own control, never a candidate');
  assert.equal(task.predictions.length, 1);
  const [prediction] = task.predictions;
  assert.equal(prediction!.score, 0.55);
  assert.deepEqual(prediction!.result, [{ id: 'span', from_name: CONTROL.span, to_name: CONTROL.text, type: 'labels', value: { start: 0, end: 12, text: 'Colon cancer', labels: [SPAN_LABEL] } }], 'only the span: the linker concept is not pre-ticked');
  for (const key of Object.keys(task.data)) assert.ok(!(Object.values(CONTROL) as string[]).includes(key) || key === CONTROL.text, `data key '${key}' would clash with a control in JSON-MIN`);
  assert.equal(buildLabelStudioTask({ request: request(), noteText: 'abcdefg', surface: 'abcde' }).predictions[0]!.score, undefined, 'no confidence, no score');
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
});

test('the plain JSONL task carries the mention and note text and the candidates', () => {
  const r = request({ candidates: [{ conceptId: 'A:1', name: 'a', score: 0.5 }] });
  const line = buildPlainTaskLine({ request: r, noteText: 'abcdefg', surface: 'abcde' });
  assert.deepEqual(line, { requestId: 'n1/m1', noteId: 'n1', mentionId: 'm1', start: 0, end: 5, label: 'Disease', stream: 'learn', policy: '', priority: 0, text: 'abcde', noteText: 'abcdefg', conceptId: null, confidence: null, nil: false, candidates: [{ conceptId: 'A:1', name: 'a', score: 0.5 }] });
});

test('the labeling config names every control the tasks and the import use, and docs/ ships the same config', () => {
  for (const name of Object.values(CONTROL)) assert.match(LABELING_CONFIG, new RegExp(` name="${name}"`));
  assert.match(LABELING_CONFIG, /<Choices name="concept" toName="text" choice="multiple" value="\$candidates"\/>/);
  assert.match(LABELING_CONFIG, new RegExp(`<Choice value="${NIL_CHOICE}"`));
  assert.match(LABELING_CONFIG, new RegExp(`<Label value="${SPAN_LABEL}"`));
  assert.match(LABELING_CONFIG, /<TextArea name="other_id"/);
  assert.equal(readFileSync('docs/examples/label-studio-config.xml', 'utf8'), LABELING_CONFIG);
});

test('top-level element lines of a JSON array, compact or pretty, with brackets and quotes inside strings', () => {
  assert.deepEqual(topLevelElementLines('[\n{"a":1},\n{"b":"]},[{"},\n{"c":"\\"["}\n]'), [2, 3, 4]);
  assert.deepEqual(topLevelElementLines('[\n  {\n    "a": [1, 2]\n  },\n  {\n    "b": {}\n  }\n]'), [2, 5]);
  assert.deepEqual(topLevelElementLines('[1, "x", [2], {}]'), [1, 1, 1, 1]);
  assert.deepEqual(topLevelElementLines('[]'), []);
});

test('JSON items are written as an array with one item per line, or as lines', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-annotate-out-'));
  try {
    const file = join(dir, 'a.json');
    assert.equal(await writeJsonItems(file, [{ a: 1 }, { b: '2' }], 'array'), 2);
    const text = readFileSync(file, 'utf8');
    assert.deepEqual(JSON.parse(text), [{ a: 1 }, { b: '2' }]);
    assert.deepEqual(topLevelElementLines(text), [2, 3]);
    await writeJsonItems(file, [], 'array');
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')), []);
    await writeJsonItems(file, [{ a: 1 }, { b: 2 }], 'lines');
    assert.equal(readFileSync(file, 'utf8'), '{"a":1}\n{"b":2}\n');
    await assert.rejects(writeJsonItems(join(dir, 'missing', 'x.json'), [{ a: 1 }], 'lines'), /cannot write .*x\.json/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a request whose requestedAt no Date holds is refused with its field, not exported to a RangeError', () => {
  // 2^53 + 2 ms passed as an integer, then buildLabelStudioTask's toISOString threw RangeError and
  // `annotate export` stopped on the one line (from the request file or the label-request topic).
  for (const requestedAt of [2 ** 53 + 2, 8.64e15 + 1, 1e300]) {
    const parsed = parseLabelRequest({ noteId: 'n1', mentionId: 'm1', start: 0, end: 5, label: 'Disease', stream: 'learn', requestedAt });
    assert.ok('reason' in parsed && /field 'requestedAt'/.test(parsed.reason), `${requestedAt}: ${JSON.stringify(parsed)}`);
  }
  assert.equal(request({ requestedAt: 8.64e15 }).requestedAt, 8.64e15, 'the last time a Date holds');
});
