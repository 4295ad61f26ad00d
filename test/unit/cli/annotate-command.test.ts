import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { annotateExport } from '../../../src/cli/commands/annotate-export.ts';
import { annotateImport } from '../../../src/cli/commands/annotate-import.ts';
import { LABELING_CONFIG } from '../../../src/eval/annotation/labeling-config.ts';
import { labelledMentionsFromJsonl } from '../../../src/eval/memory-sources.ts';
import { capture } from '../../support/capture-console.ts';

const REQUESTS = 'test/fixtures/label-studio/label-requests.jsonl';
const CORPUS = 'test/fixtures/eval/sample.PubTator';
const INDEX = 'test/fixtures/eval/index';
let dir: string;
let tasks: string;
let plainTasks: string;

const lines = (file: string) => readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cuilink-annotate-'));
  tasks = join(dir, 'tasks.json');
  plainTasks = join(dir, 'tasks.jsonl');
});

after(() => rmSync(dir, { recursive: true, force: true }));

test('annotate export: tasks, config and plain JSONL written; bad requests refused on stderr by line', async () => {
  const config = join(dir, 'config.xml');
  const run = await capture(() => annotateExport.run(['--requests', REQUESTS, '--corpus', CORPUS, '--tasks', tasks, '--config', config, '--jsonl', plainTasks]));
  assert.equal(run.code, 0);
  assert.deepEqual(run.err.map((l) => l.split(': ')[1]), ['line 5', 'line 6', 'line 10', 'line 11', 'line 12', 'line 13']);
  assert.match(run.out.join('\n'), /13 requests read from .*label-requests\.jsonl, 7 tasks \(learn 5, measure 2\), 6 refused/);
  for (const line of [...run.err, ...run.out]) assert.doesNotMatch(line, /cancer|anemia|Aspirin/i, 'no note text on the console');
  const written = JSON.parse(readFileSync(tasks, 'utf8')) as { data: Record<string, unknown> }[];
  assert.deepEqual(written.map((t) => t.data.requestId), ['1001/0-12', '1001/63-69', '1001/71-96', '1002/39-55', '1003/12-18', '1001/17-30', '1002/0-22']);
  assert.equal(readFileSync(config, 'utf8'), LABELING_CONFIG);
  assert.deepEqual(lines(plainTasks).map((l) => l.text), ['Colon cancer', 'anemia', 'Breast and ovarian cancer', 'unknown syndrome', 'asthma', 'breast cancer', 'Ochronotic arthropathy']);
});

test('annotate import of the hand-written Label Studio export: the valid answers as gold JSONL that memory add reads, NIL apart, the rest refused by line and task', async () => {
  const gold = join(dir, 'gold.jsonl');
  const nil = join(dir, 'nil.jsonl');
  const run = await capture(() => annotateImport.run(['--export', 'test/fixtures/label-studio/export.json', '--tasks', tasks, '--index', INDEX, '--out', gold, '--nil-out', nil]));
  assert.equal(run.code, 0);
  assert.equal(run.err.length, 10);
  for (const line of run.err) assert.match(line, /^annotate import: line \d+ \/ task 1\d\d: annotation \d+: request \S+: /);
  assert.match(run.out.join('\n'), /13 tasks, 15 answers: 4 gold \(learn 3, measure 1\), 1 NIL, 10 refused \(unknown-request 1, cancelled 1, missing-span 1, span-mismatch 1, not-a-candidate 1, unknown-concept 1, nil-conflict 1, no-answer 1, duplicate 2\), 1 not annotated yet; 4 gold → .*gold\.jsonl, 1 NIL → .*nil\.jsonl/);
  assert.deepEqual(lines(gold)[0], { noteId: '1001', mentionId: '0-12', ids: ['MESH:D003110'], label: 'SpecificDisease', start: 0, end: 12, text: 'Colon cancer', stream: 'learn', annotator: 'label-studio-user:3', annotatedAt: Date.parse('2026-01-05T10:10:03.412Z'), source: 'label-studio', time: Date.parse('2026-01-05T10:10:03.412Z') });
  assert.deepEqual(lines(gold).map((g) => `${g.noteId}/${g.mentionId} ${(g.ids as string[]).join('+')} ${g.stream}`), ['1001/0-12 MESH:D003110 learn', '1001/63-69 MESH:D000743 learn', '1001/71-96 MESH:D001943+MESH:D010051 measure', '1002/0-22 MESH:D009794+MESH:D007592 learn']);
  assert.deepEqual(lines(nil).map((n) => [n.noteId, n.mentionId, n.nil, n.text]), [['1002', '39-55', true, 'unknown syndrome']]);
  const learned = labelledMentionsFromJsonl(gold);
  assert.deepEqual(learned.map((m) => [m.record.text, m.record.ids, m.record.noteId, m.record.mentionId, m.record.source]), [
    ['Colon cancer', ['MESH:D003110'], '1001', '0-12', 'label-studio'],
    ['anemia', ['MESH:D000743'], '1001', '63-69', 'label-studio'],
    ['Breast and ovarian cancer', ['MESH:D001943', 'MESH:D010051'], '1001', '71-96', 'label-studio'],
    ['Ochronotic arthropathy', ['MESH:D009794', 'MESH:D007592'], '1002', '0-22', 'label-studio'],
  ]);
});

test('round trip from the exported tasks: what Label Studio exports for them (span kept, a candidate ticked) comes back as gold for every request', async () => {
  // Label Studio's JSON export of these tasks as an annotator leaves them: the prediction's span
  // region copied into the annotation, the top candidate ticked (NIL where there is none).
  const exported = (JSON.parse(readFileSync(tasks, 'utf8')) as { data: { candidates: { value: string }[] }; predictions: { result: unknown[] }[] }[]).map((task, i) => ({
    id: 500 + i,
    data: task.data,
    annotations: [{
      id: 900 + i,
      completed_by: 7,
      was_cancelled: false,
      updated_at: '2026-02-01T12:00:00.000000Z',
      result: [
        ...task.predictions[0]!.result.map((r) => ({ ...(r as object), origin: 'prediction' })),
        task.data.candidates.length > 0
          ? { id: `c${i}`, from_name: 'concept', to_name: 'text', type: 'choices', origin: 'manual', value: { choices: [task.data.candidates[0]!.value] } }
          : { id: `n${i}`, from_name: 'none', to_name: 'text', type: 'choices', origin: 'manual', value: { choices: ['NIL'] } },
      ],
    }],
    predictions: [1],
  }));
  const exportFile = join(dir, 'derived-export.json');
  writeFileSync(exportFile, JSON.stringify(exported));
  const gold = join(dir, 'derived-gold.jsonl');
  const run = await capture(() => annotateImport.run(['--export', exportFile, '--tasks', tasks, '--index', INDEX, '--out', gold]));
  assert.deepEqual(run.err, []);
  assert.equal(run.code, 0);
  const expected = exported.map((t) => `${(t.data as unknown as Record<string, string>).requestId} ${t.data.candidates[0]!.value}`);
  assert.deepEqual(lines(gold).map((g) => `${g.noteId}/${g.mentionId} ${(g.ids as string[]).join('+')}`), expected);
  assert.ok(lines(gold).every((g) => g.annotator === 'label-studio-user:7' && g.annotatedAt === Date.parse('2026-02-01T12:00:00Z')));
});

test('annotate import of plain JSONL answers against the plain tasks; --annotator names the answers that name none', async () => {
  const answers = join(dir, 'answers.jsonl');
  writeFileSync(answers, [
    JSON.stringify({ noteId: '1003', mentionId: '12-18', conceptId: 'MESH:D001249' }),
    JSON.stringify({ noteId: '1003', mentionId: '12-18', ids: ['HP:0002099'] }),
    JSON.stringify({ noteId: '1001', mentionId: '17-30', ids: ['D001943'], annotator: 'reviewer' }),
  ].join('\n'));
  const gold = join(dir, 'plain-gold.jsonl');
  const run = await capture(() => annotateImport.run(['--jsonl', answers, '--tasks', plainTasks, '--index', INDEX, '--out', gold, '--annotator', 'team-a']));
  assert.equal(run.code, 0);
  assert.deepEqual(run.err, ["annotate import: line 2: request 1003/12-18: unknown concept id 'HP:0002099' (not in the index's KB)"]);
  assert.deepEqual(lines(gold).map((g) => [g.mentionId, g.ids, g.annotator, g.stream, g.source]), [['12-18', ['MESH:D001249'], 'team-a', 'measure', 'annotation-jsonl'], ['17-30', ['MESH:D001943'], 'reviewer', 'learn', 'annotation-jsonl']]);
});

test('nothing valid exits 3 and still writes the (empty) gold file; flag mistakes are errors before any work', async () => {
  const onlySkipped = join(dir, 'skipped.json');
  writeFileSync(onlySkipped, JSON.stringify([{ id: 1, data: { noteId: '1001', mentionId: '0-12', start: 0, end: 12 }, annotations: [{ id: 2, was_cancelled: true, result: [] }] }]));
  const gold = join(dir, 'stale.jsonl');
  writeFileSync(gold, '{"stale": true}\n');
  const run = await capture(() => annotateImport.run(['--export', onlySkipped, '--tasks', tasks, '--index', INDEX, '--out', gold]));
  assert.equal(run.code, 3);
  assert.deepEqual(run.err, ['annotate import: line 1 / task 1: annotation 2: request 1001/0-12: skipped in Label Studio (was_cancelled)']);
  assert.equal(readFileSync(gold, 'utf8'), '');

  const base = ['--export', onlySkipped, '--tasks', tasks, '--index', INDEX];
  await assert.rejects(annotateImport.run([...base, '--out', join(dir, 'a'), '--out', join(dir, 'b')]), /--out given more than once/);
  await assert.rejects(annotateImport.run([...base, '--index', INDEX, '--out', gold]), /--index given more than once/);
  await assert.rejects(annotateImport.run([...base]), /give --out FILE and\/or --gold-topic T/);
  await assert.rejects(annotateImport.run(['--export', onlySkipped, '--index', INDEX, '--out', gold]), /missing required flag --tasks/);
  await assert.rejects(annotateImport.run([...base, '--jsonl', onlySkipped, '--out', gold]), /exactly one of --export or --jsonl/);
  await assert.rejects(annotateImport.run([...base, '--out', gold, '--nil-out', gold]), /--out and --nil-out must be different files/);
  await assert.rejects(annotateImport.run(['--export', join(dir, 'missing.json'), '--tasks', tasks, '--index', INDEX, '--out', gold]), /cannot read .*missing\.json/);
  const brokers = process.env.CUILINK_BROKERS;
  delete process.env.CUILINK_BROKERS;
  try {
    await assert.rejects(annotateImport.run([...base, '--gold-topic', 'gold']), /no Kafka brokers/);
  } finally {
    if (brokers !== undefined) process.env.CUILINK_BROKERS = brokers;
  }
  await assert.rejects(annotateExport.run(['--requests', REQUESTS, '--corpus', CORPUS, '--tasks', tasks, '--tasks', plainTasks]), /--tasks given more than once/);
  await assert.rejects(annotateExport.run(['--requests', REQUESTS, '--notes', CORPUS, '--corpus', CORPUS, '--tasks', tasks]), /exactly one of --corpus or --notes/);
  await assert.rejects(annotateExport.run(['--requests', REQUESTS, '--corpus', CORPUS]), /give --tasks FILE and\/or --jsonl FILE/);
  await assert.rejects(annotateExport.run(['--requests', REQUESTS, '--corpus', CORPUS, '--tasks', tasks, '--jsonl', tasks]), /must be different files/);
  const none = await capture(() => annotateExport.run(['--requests', REQUESTS, '--corpus', 'test/fixtures/eval/stream-sample.PubTator', '--jsonl', join(dir, 'none.jsonl')]));
  assert.equal(none.code, 3, 'no request found its note: no task, exit 3');
});
