import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ParseError } from '../../../src/kb/errors.ts';
import { emptyPubTatorStats, readPubTator, type PubTatorDocument } from '../../../src/eval/pubtator.ts';
import { loadPubTatorCorpus, mentionKey } from '../../../src/eval/gold.ts';
import { parseGoldIds } from '../../../src/eval/gold-ids.ts';

const FIXTURES = 'test/fixtures/eval';

async function readAll(file: string, types?: RegExp): Promise<PubTatorDocument[]> {
  const docs: PubTatorDocument[] = [];
  for await (const doc of readPubTator(file, { types })) docs.push(doc);
  return docs;
}

test('gold ids: bare MeSH gets the prefix, OMIM kept, composites become a set, -1 is nothing', () => {
  assert.deepEqual(parseGoldIds('D005955'), ['MESH:D005955']);
  assert.deepEqual(parseGoldIds(' D008661'), ['MESH:D008661']);
  assert.deepEqual(parseGoldIds('OMIM:601665'), ['OMIM:601665']);
  assert.deepEqual(parseGoldIds('mesh:C535662'), ['MESH:C535662']);
  assert.deepEqual(parseGoldIds('D001943|D010051'), ['MESH:D001943', 'MESH:D010051']);
  assert.deepEqual(parseGoldIds('D009794+D007592'), ['MESH:D009794', 'MESH:D007592']);
  assert.deepEqual(parseGoldIds('D000001|D000001'), ['MESH:D000001']);
  assert.deepEqual(parseGoldIds('-1'), []);
});

test('reader: text is title + space + abstract, duplicates and -1 dropped, documents counted once', async () => {
  const stats = emptyPubTatorStats();
  const docs: PubTatorDocument[] = [];
  for await (const doc of readPubTator(`${FIXTURES}/sample.PubTator`, { stats })) docs.push(doc);
  assert.deepEqual(docs.map((d) => d.pmid), ['1001', '1002', '1003']);
  const first = docs[0]!;
  assert.equal(first.text, `${first.title} ${first.abstract}`);
  assert.equal(first.annotations.length, 5); // 6 lines, one repeats the span 46-58
  for (const a of first.annotations) assert.equal(first.text.slice(a.start, a.end), a.text);
  assert.deepEqual(first.annotations.find((a) => a.type === 'CompositeMention')!.ids, ['MESH:D001943', 'MESH:D010051']);
  assert.deepEqual(first.annotations.find((a) => a.text === 'anemia')!.ids, ['MESH:D000740']);
  assert.deepEqual(docs[1]!.annotations.map((a) => a.ids), [['MESH:D009794', 'MESH:D007592'], ['OMIM:601665']]);
  assert.deepEqual(stats, { documents: 3, duplicateDocuments: 1, annotations: 8, duplicateAnnotations: 1, skippedNoConcept: 1, relationLines: 1 });
});

test('reader: --types keeps matching annotation types only', async () => {
  const docs = await readAll(`${FIXTURES}/sample.PubTator`, /^SpecificDisease$/);
  assert.deepEqual(docs.map((d) => d.annotations.length), [3, 1, 0]);
});

test('corpus: notes carry mentions with span ids and NER labels; gold map keyed by note and mention', async () => {
  const corpus = await loadPubTatorCorpus(`${FIXTURES}/sample.PubTator`);
  assert.equal(corpus.notes.length, 3);
  assert.equal(corpus.gold.size, 8);
  const note = corpus.notes[0]!;
  assert.deepEqual(note.mentions[0], { id: '0-12', start: 0, end: 12, text: 'Colon cancer', label: 'SpecificDisease' });
  const gold = corpus.gold.get(mentionKey('1001', '71-96'))!;
  assert.deepEqual(gold.ids, ['MESH:D001943', 'MESH:D010051']);
  assert.equal(gold.label, 'CompositeMention');
});

test('reader: malformed lines are ParseErrors naming file and line', async () => {
  await assert.rejects(readAll(`${FIXTURES}/bad-offsets.PubTator`), (error: unknown) => {
    assert.ok(error instanceof ParseError);
    assert.equal(error.line, 4);
    assert.match(error.message, /bad-offsets\.PubTator:4: span \[0, 99\)/);
    return true;
  });
  await assert.rejects(readAll(`${FIXTURES}/bad-fields.PubTator`), /bad-fields\.PubTator:3: expected/);
  await assert.rejects(readAll(`${FIXTURES}/missing.PubTator`), /cannot read .*missing\.PubTator/);
});
