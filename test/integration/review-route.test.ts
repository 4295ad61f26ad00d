import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureTopics } from '../../src/stream/topics.ts';
import { avroToLinkedNote, createRecordCodec } from '../../src/stream/avro/index.ts';
import type { StageRuntime } from '../../src/cli/stage-runtime.ts';
import { goldSample } from '../../src/cli/commands/gold-sample.ts';
import type { LinkedNote } from '../../src/link/types.ts';
import { readTopics, waitFor } from '../support/stream-fixtures.ts';
import { StageBed } from '../support/stage-bed.ts';
import { capture } from '../support/capture-console.ts';

// The review route end to end on a real broker: notes published from a PubTator corpus by
// gold-sample, linked by a real stage (default models, calibration, phenotype index) that also
// writes its unsure mentions to a review topic, and gold-sample answering exactly those.
const bed = new StageBed('review');
let runtime: StageRuntime;
const codec = createRecordCodec();

const TITLE = 'Seizure and a blue car.';
const ABSTRACT = 'Hypotonia was noted; a purple spoon lay on the table.';
const TEXT = `${TITLE} ${ABSTRACT}`;
const span = (phrase: string) => [TEXT.indexOf(phrase), TEXT.indexOf(phrase) + phrase.length] as const;
const ANNOTATIONS: [string, string][] = [
  ['Seizure', 'HP:0001250'],
  ['blue car', 'HP:9999991'],
  ['Hypotonia', 'HP:0001252'],
  ['purple spoon', 'HP:9999992'],
];

before(async () => {
  await bed.start();
  await ensureTopics(bed.kafka, ['notes', 'linked', 'dead', 'review', 'gold'], { partitions: 2 });
  runtime = await bed.startStage({
    groupId: 'review-test',
    topics: { input: 'notes', output: 'linked', deadLetter: 'dead', review: 'review' },
    review: { belowConfidence: 0.5 },
    linker: { indexDir: bed.indexDir, threads: 1 },
  });
});

after(() => bed.stop());

test('unsure mentions go to the review topic beside their link, and gold-sample answers exactly those', async () => {
  const corpus = join(bed.root, 'corpus.txt');
  const lines = [`901|t|${TITLE}`, `901|a|${ABSTRACT}`, ...ANNOTATIONS.map(([phrase, id]) => `901\t${span(phrase)[0]}\t${span(phrase)[1]}\t${phrase}\tPhenotype\t${id}`)];
  writeFileSync(corpus, `${lines.join('\n')}\n\n`);
  assert.equal(await goldSample.run(['--corpus', corpus, '--fraction', '0', '--gold-topic', 'gold', '--notes-topic', 'notes', '--brokers', bed.broker.brokers.join(',')]), 0);

  const read = await readTopics(bed.kafka, ['linked'], (r) => r.get('linked')!.length >= 1);
  const linked: LinkedNote = avroToLinkedNote(await codec.decode('LinkedNote', read.get('linked')![0]!.value, read.get('linked')![0]!.headers as never));
  assert.equal(linked.mentions.length, 4);
  for (const m of linked.mentions) assert.ok(m.confidence !== null && m.confidence >= 0 && m.confidence <= 1, 'every link has a probability');
  const unsure = linked.mentions.filter((m) => m.nil || m.confidence! < 0.5);
  const byText = new Map(linked.mentions.map((m) => [TEXT.slice(m.start, m.end), m]));
  assert.deepEqual([byText.get('Seizure')!.via, byText.get('Hypotonia')!.via], ['exact', 'exact']);
  assert.ok(!unsure.includes(byText.get('Seizure')!) && !unsure.includes(byText.get('Hypotonia')!), 'exact KB names are sure');
  assert.ok(unsure.length > 0, `the nonsense mentions are unsure: ${linked.mentions.map((m) => `${m.mentionId} ${m.confidence}`).join(', ')}`);

  const reviewRead = await readTopics(bed.kafka, ['review'], (r) => r.get('review')!.length >= unsure.length, { timeoutMs: 30_000 });
  const reviews = await Promise.all(reviewRead.get('review')!.map(async (r) => ({ key: r.key, record: await codec.decode('ReviewMention', r.value, r.headers as never) })));
  assert.deepEqual(reviews.map((r) => r.record.mentionId).sort(), unsure.map((m) => m.mentionId).sort(), 'exactly the unsure mentions, once each');
  for (const { key, record } of reviews) {
    const m = linked.mentions.find((x) => x.mentionId === record.mentionId)!;
    assert.equal(key, '901');
    assert.deepEqual([record.conceptId, record.confidence, record.via, record.inKb, record.nil, record.start, record.end], [m.conceptId, m.confidence, m.via, m.inKb, m.nil, m.start, m.end]);
    assert.ok(record.inKb !== null, 'P(in KB) travels with the review record');
    assert.deepEqual(record.candidates.map((c) => c.conceptId), m.candidates.map((c) => c.conceptId), 'the annotator sees the linker’s candidates');
    assert.ok(!JSON.stringify(record).includes('purple') && !JSON.stringify(record).includes('blue car'), 'no mention text on the review topic');
  }
  // The stage counts a delivery when its commit returns, which can be a moment after a consumer
  // already reads the committed records.
  await waitFor(() => runtime.stage.stats().counts.reviewed >= unsure.length, 10_000, 'the stage to count its reviewed mentions');
  assert.equal(runtime.stage.stats().counts.reviewed, unsure.length, 'counted');
  assert.equal(Object.values(runtime.stage.stats().counts.linksByStage).reduce((a, b) => a + b, 0), 4, 'every produced link counted by its stage');

  assert.equal(await goldSample.run(['--corpus', corpus, '--review-topic', 'review', '--gold-topic', 'gold', '--brokers', bed.broker.brokers.join(',')]), 0);
  const gold = await readTopics(bed.kafka, ['gold'], (r) => r.get('gold')!.length >= unsure.length, { timeoutMs: 30_000 });
  const goldMentions = await Promise.all(gold.get('gold')!.map((r) => codec.decode('GoldMention', r.value, r.headers as never)));
  assert.deepEqual(goldMentions.map((g) => g.mentionId).sort(), unsure.map((m) => m.mentionId).sort(), 'gold for exactly the mentions sent to review');
  await assert.rejects(goldSample.run(['--corpus', corpus, '--review-topic', 'review', '--fraction', '1', '--brokers', bed.broker.brokers.join(',')]), /exactly one of --fraction, --review-topic or --request-topic/);
});

test('gold-sample --review-topic with a corpus none of whose mentions went to review says why nothing was sampled', async () => {
  // Runs after the test above, which left review records of note 901 on the topic.
  const other = join(bed.root, 'other-corpus.txt');
  writeFileSync(other, `902|t|${TITLE}\n902|a|${ABSTRACT}\n902\t0\t7\tSeizure\tPhenotype\tHP:0001250\n\n`);
  const { code, out, err } = await capture(() => goldSample.run(['--corpus', other, '--review-topic', 'review', '--gold-topic', 'gold', '--brokers', bed.broker.brokers.join(',')]));
  assert.equal(code, 0);
  assert.match(out.join('\n'), /0 sampled/);
  assert.match(err.join('\n'), /none of the \d+ mentions on review is an annotation of .*other-corpus\.txt.*the corpus whose notes the stage linked/);
});

test('gold-sample --review-topic on a review topic that holds nothing yet says so', async () => {
  await ensureTopics(bed.kafka, ['review-empty'], { partitions: 1 });
  const corpus = join(bed.root, 'empty-review-corpus.txt');
  writeFileSync(corpus, `903|t|${TITLE}\n903|a|${ABSTRACT}\n903\t0\t7\tSeizure\tPhenotype\tHP:0001250\n\n`);
  const { code, err } = await capture(() => goldSample.run(['--corpus', corpus, '--review-topic', 'review-empty', '--gold-topic', 'gold', '--brokers', bed.broker.brokers.join(',')]));
  assert.equal(code, 0);
  assert.match(err.join('\n'), /review-empty holds no record: .*linked/);
});
