import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { createRecordCodec } from '../../src/stream/avro/index.ts';
import { annotateExport } from '../../src/cli/commands/annotate-export.ts';
import { annotateImport } from '../../src/cli/commands/annotate-import.ts';
import { readLabelRequestFile } from '../../src/eval/annotation/label-request-file.ts';
import { publish, readTopics } from '../support/stream-fixtures.ts';

// The annotator round trip on a real broker: the stage's LabelRequest topics (learn and measure)
// read to their end by `annotate export`, the tasks answered as Label Studio exports them, and
// `annotate import --gold-topic` publishing the gold as GoldMention records the evaluator and the
// memory updater consume. A record on the request topic that is not a LabelRequest is refused
// alone.
let broker: LocalBroker;
let root: string;
let kafka: KafkaClient;
const codec = createRecordCodec();

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-annotate-it-'));
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'annotate-round-trip-test', logLevel: 'nothing' });
  await ensureTopics(kafka, ['learn-requests', 'measure-requests', 'gold'], { partitions: 2 });
});

after(async () => {
  await broker?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function quiet(fn: () => Promise<number>): Promise<{ code: number; err: string[] }> {
  const err: string[] = [];
  const [log, error] = [console.log, console.error];
  console.log = () => {};
  console.error = (...args: unknown[]) => void err.push(args.join(' '));
  try {
    return { code: await fn(), err };
  } finally {
    console.log = log;
    console.error = error;
  }
}

test('LabelRequest topics → Label Studio tasks → answers → GoldMention records on the gold topic', async () => {
  const { requests } = await readLabelRequestFile('test/fixtures/label-studio/label-requests.jsonl');
  const good = requests.map((r) => r.request).filter((r) => r.noteId !== '9999' && r.mentionId !== '30-80' && r.mentionId !== '46-58');
  for (const stream of ['learn', 'measure'] as const) {
    const messages = await Promise.all(good.filter((r) => r.stream === stream).map(async (r) => ({ key: r.noteId, ...(await codec.encode('LabelRequest', r)) })));
    await publish(kafka, `${stream}-requests`, messages);
  }
  await publish(kafka, 'learn-requests', [{ key: '1001', value: Buffer.from('not avro') }]);
  const brokers = ['--brokers', broker.brokers.join(',')];

  const tasks = join(root, 'tasks.json');
  const exported = await quiet(() => annotateExport.run(['--request-topic', 'learn-requests', '--request-topic', 'measure-requests', '--corpus', 'test/fixtures/eval/sample.PubTator', '--tasks', tasks, ...brokers]));
  assert.equal(exported.code, 0);
  assert.equal(exported.err.length, 2, exported.err.join('\n'));
  assert.match(exported.err.find((l) => l.includes('not a LabelRequest record'))!, /learn-requests partition \d offset \d+: not a LabelRequest record/);
  assert.match(exported.err.find((l) => l.includes('duplicate'))!, /request 1003\/12-18: duplicate request/, 'the fixture asks 1003/12-18 twice: one task');
  const taskList = JSON.parse(readFileSync(tasks, 'utf8')) as { data: { requestId: string; noteId: string; candidates: { value: string }[] }; predictions: { result: unknown[] }[] }[];
  assert.deepEqual(taskList.map((t) => t.data.requestId).sort(), ['1001/0-12', '1001/17-30', '1001/63-69', '1001/71-96', '1002/0-22', '1002/39-55', '1003/12-18']);

  const lsExport = taskList.map((task, i) => ({
    id: 300 + i,
    data: task.data,
    annotations: [{
      id: 700 + i,
      completed_by: 2,
      was_cancelled: false,
      updated_at: '2026-03-01T08:00:00.000000Z',
      result: [
        ...task.predictions[0]!.result,
        task.data.candidates.length > 0 && task.data.requestId !== '1002/39-55'
          ? { id: `c${i}`, from_name: 'concept', to_name: 'text', type: 'choices', value: { choices: [task.data.candidates[0]!.value] } }
          : { id: `n${i}`, from_name: 'none', to_name: 'text', type: 'choices', value: { choices: ['NIL'] } },
      ],
    }],
  }));
  lsExport.push({ ...lsExport[0]!, id: 399, annotations: [{ ...lsExport[0]!.annotations[0]!, id: 799 }] });
  const exportFile = join(root, 'export.json');
  writeFileSync(exportFile, JSON.stringify(lsExport, null, 2));
  const imported = await quiet(() => annotateImport.run(['--export', exportFile, '--tasks', tasks, '--index', 'test/fixtures/eval/index', '--gold-topic', 'gold', ...brokers]));
  assert.equal(imported.code, 0);
  assert.equal(imported.err.length, 1);
  assert.match(imported.err[0]!, /task 399: annotation 799: request \S+: annotated again; .* this one agrees/);

  const read = await readTopics(kafka, ['gold'], (r) => r.get('gold')!.length >= 6, { timeoutMs: 30_000 });
  const gold = await Promise.all(read.get('gold')!.map(async (r) => ({ key: r.key, record: await codec.decode('GoldMention', r.value, r.headers as never) })));
  assert.equal(gold.length, 6, 'seven answers, one NIL kept off the topic');
  for (const { key, record } of gold) {
    assert.equal(key, record.noteId, 'keyed by note id, as the evaluator joins');
    assert.equal(record.annotator, 'label-studio-user:2');
    assert.equal(record.annotatedAt, Date.parse('2026-03-01T08:00:00Z'));
    const task = taskList.find((t) => t.data.requestId === `${record.noteId}/${record.mentionId}`)!;
    assert.deepEqual(record.ids, [task.data.candidates[0]!.value]);
  }
  assert.ok(!gold.some((g) => g.record.mentionId === '39-55'), 'the NIL answer is not published');
});
