import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { ensureTopics } from '../../src/stream/topics.ts';
import { createRecordCodec } from '../../src/stream/avro/index.ts';
import { goldStream } from '../../src/stream/label-selection/note-draw.ts';
import type { StageRuntime } from '../../src/cli/stage-runtime.ts';
import { memoryAdd } from '../../src/cli/commands/memory.ts';
import type { NoteInput } from '../../src/link/types.ts';
import { readTopics, waitFor } from '../support/stream-fixtures.ts';
import { StageBed } from '../support/stage-bed.ts';
import { goldSample } from '../../src/cli/commands/gold-sample.ts';

// The label selector on a real broker: a real stage (default models and calibration, phenotype
// index, a memory that already knows one surface) asks for labels on two topics: the measure
// slice at once, the learn stream's budget when its window closes.
const bed = new StageBed('labels');
let runtime: StageRuntime;
const codec = createRecordCodec();
const SPLIT_SEED = 5;
const MEASURE_FRACTION = 0.3;

function note(i: number): NoteInput {
  const phrases = ['Seizure', 'blue car', 'purple spoon', `kite number ${i}`];
  const text = `Note ${i}: ${phrases.join(', ')}.`;
  return {
    noteId: String(1000 + i),
    text,
    mentions: phrases.map((p) => ({ id: `${text.indexOf(p)}-${text.indexOf(p) + p.length}`, start: text.indexOf(p), end: text.indexOf(p) + p.length, text: p, label: 'Phenotype' })),
  };
}

/** The notes as a PubTator corpus (title only), so gold-sample publishes them and answers requests for them. */
function corpus(file: string, notes: NoteInput[]): string {
  writeFileSync(file, notes.map((n) => [`${n.noteId}|t|${n.text}`, ...n.mentions.map((m) => `${n.noteId}\t${m.start}\t${m.end}\t${m.text}\tPhenotype\tHP:${n.noteId}${m.start}`)].join('\n')).join('\n\n') + '\n');
  return file;
}

before(async () => {
  await bed.start();
  await ensureTopics(bed.kafka, ['notes', 'linked', 'dead', 'asks', 'measure', 'gold'], { partitions: 1 });
  const gold = join(bed.root, 'gold.jsonl');
  writeFileSync(gold, `${JSON.stringify({ text: 'blue car', label: 'Phenotype', conceptId: 'HP:0001250' })}\n`);
  assert.equal(await memoryAdd.run(['--memory', join(bed.root, 'memory'), '--jsonl', gold, '--index', bed.indexDir, '--provider', 'cpu', '--threads', '1']), 0);
  runtime = await bed.startStage({
    groupId: 'labels-test',
    topics: { input: 'notes', output: 'linked', deadLetter: 'dead', labelRequests: 'asks', measureRequests: 'measure' },
    labels: { policy: 'confidence-recurrence', recurrenceExponent: 1, budget: 2, windowMs: 1000, measureFraction: MEASURE_FRACTION, splitSeed: SPLIT_SEED },
    linker: { indexDir: bed.indexDir, threads: 1, memoryDir: join(bed.root, 'memory') },
  });
});

after(() => bed.stop());

test('the measure slice is asked whole and at once; the learn budget goes to the recurring doubtful surface, never to one the memory knows, also on an idle stream; gold-sample answers exactly the requests', async () => {
  const notes = Array.from({ length: 10 }, (_, i) => note(i));
  const measureNotes = notes.filter((n) => goldStream(n.noteId, 1 - MEASURE_FRACTION, SPLIT_SEED) === 'measure').map((n) => n.noteId);
  assert.ok(measureNotes.length > 0 && measureNotes.length < notes.length, 'the fixture has both streams');
  const brokers = ['--brokers', bed.broker.brokers.join(',')];
  assert.equal(await goldSample.run(['--corpus', corpus(join(bed.root, 'first.txt'), notes), '--fraction', '0', '--gold-topic', 'gold', '--notes-topic', 'notes', ...brokers]), 0);
  const first = await readTopics(bed.kafka, ['linked', 'measure'], (r) => r.get('linked')!.length >= 10 && r.get('measure')!.length >= 4 * measureNotes.length, { timeoutMs: 60_000 });
  const measured = await Promise.all(first.get('measure')!.map((r) => codec.decode('LabelRequest', r.value, r.headers as never)));
  assert.deepEqual([...new Set(measured.map((m) => m.noteId))].sort(), [...measureNotes].sort(), 'exactly the drawn notes');
  assert.equal(measured.length, 4 * measureNotes.length, 'every mention of them, once');
  assert.ok(measured.every((m) => m.stream === 'measure' && m.policy === 'random-note'));

  // The learn window (1 s) closes while no note comes: the stage's timer sends its choice alone.
  const second = await readTopics(bed.kafka, ['asks'], (r) => r.get('asks')!.length >= 2, { timeoutMs: 60_000 });
  await sleep(500);
  const asks = await Promise.all(second.get('asks')!.map(async (r) => ({ key: r.key, record: await codec.decode('LabelRequest', r.value, r.headers as never) })));
  assert.equal(asks.length, 2, 'the budget: two labels per window');
  const textOf = (noteId: string, start: number, end: number) => notes.find((n) => n.noteId === noteId)!.text.slice(start, end);
  const asked = asks.map(({ record }) => textOf(record.noteId, record.start, record.end));
  assert.equal(asked[0], 'purple spoon', `the doubtful surface seen in every note is asked first: ${asked.join(', ')}`);
  assert.ok(!asked.includes('blue car'), 'the memory already knows blue car');
  assert.equal(new Set(asked).size, 2, 'each surface once');
  for (const { key, record } of asks) {
    assert.equal(key, record.noteId);
    assert.ok(!measureNotes.includes(record.noteId), 'a measured note never feeds the learn stream');
    assert.equal(record.stream, 'learn');
    assert.ok(record.candidates.length > 0 && record.confidence !== null, 'the annotator sees the linker’s candidates and confidence');
    assert.ok(!/purple|spoon|kite|Note \d/.test(JSON.stringify(record)), 'no note or mention text');
  }
  assert.equal(asks[0]!.record.recurrence, 10, 'purple spoon occurred in all 10 notes');
  // Counted when the delivery's commit returns, which can be a moment after a consumer reads it.
  const counted = () => runtime.stage.stats().counts.labelRequests;
  await waitFor(() => (counted().measure ?? 0) >= measured.length && (counted().learn ?? 0) >= 2, 10_000, 'the stage to count its label requests');
  assert.deepEqual(counted(), { measure: measured.length, learn: 2 });

  // A simulated annotator answers exactly the learn requests: gold for those mentions and no others.
  assert.equal(await goldSample.run(['--corpus', join(bed.root, 'first.txt'), '--request-topic', 'asks', '--gold-topic', 'gold', ...brokers]), 0);
  const gold = await readTopics(bed.kafka, ['gold'], (r) => r.get('gold')!.length >= 2, { timeoutMs: 30_000 });
  const goldMentions = await Promise.all(gold.get('gold')!.map((r) => codec.decode('GoldMention', r.value, r.headers as never)));
  assert.deepEqual(goldMentions.map((g) => `${g.noteId}/${g.mentionId}`).sort(), asks.map(({ record }) => `${record.noteId}/${record.mentionId}`).sort());
});
