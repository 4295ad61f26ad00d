import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { selectSplit, tuneDocumentIds, TUNING_SPLIT_SIZE } from '../../../src/eval/tuning-split.ts';

const ids = Array.from({ length: 300 }, (_, i) => String(9_000_000 + i * 7));

test('the tune part has exactly the requested size and does not depend on order', () => {
  const a = tuneDocumentIds(ids);
  const b = tuneDocumentIds([...ids].reverse());
  assert.equal(a.size, TUNING_SPLIT_SIZE);
  assert.deepEqual([...a].sort(), [...b].sort());
});

test('tune and learn are disjoint and cover every document; another seed gives another split', () => {
  const items = ids.map((id) => ({ id }));
  const tune = selectSplit(items, (x) => x.id, 'tune');
  const learn = selectSplit(items, (x) => x.id, 'learn');
  assert.equal(tune.length + learn.length, ids.length);
  assert.equal(new Set([...tune, ...learn].map((x) => x.id)).size, ids.length);
  const other = tuneDocumentIds(ids, { seed: 7 });
  assert.notDeepEqual([...other].sort(), [...tuneDocumentIds(ids)].sort());
});

test('a split larger than the corpus is refused', () => {
  assert.throws(() => tuneDocumentIds(ids.slice(0, 50)), /needs more than 50 documents/);
});

test('the documented split of NCBI-disease train is stable (first ids pinned)', { skip: !existsShared() }, () => {
  const text = readFileSync(new URL('../../../../shared/data/ncbi-disease/NCBItrainset_corpus.txt', import.meta.url), 'utf8');
  const docs = [...new Set([...text.matchAll(/^(\d+)\|t\|/gm)].map((m) => m[1]!))];
  const tune = tuneDocumentIds(docs);
  assert.equal(docs.length, 592);
  assert.equal(tune.size, 100);
  // Pinned: every bench result that says "chosen on the tune split" refers to these documents.
  assert.deepEqual([...tune].sort().slice(0, 5), ['10071185', '10078732', '10083734', '10085150', '10090885']);
});

function existsShared(): boolean {
  try {
    readFileSync(new URL('../../../../shared/data/ncbi-disease/PROVENANCE.md', import.meta.url));
    return true;
  } catch {
    return false;
  }
}
