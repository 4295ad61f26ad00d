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

test('the split is drawn over every document of the file: a type filter or -1 gold moves no document between parts', async () => {
  const { mkdtempSync, writeFileSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { loadPubTatorCorpus } = await import('../../../src/eval/gold.ts');
  const { keepSplitPart } = await import('../../../src/eval/offline-eval.ts');
  const { labelledMentionsFromPubTator } = await import('../../../src/eval/memory-sources.ts');
  // 240 documents: a third annotate only a Modifier, a third only gold -1, the rest a SpecificDisease.
  const lines: string[] = [];
  for (let i = 0; i < 240; i++) {
    const pmid = String(7_000_000 + i * 13);
    const [type, id] = i % 3 === 0 ? ['Modifier', 'D001'] : i % 3 === 1 ? ['SpecificDisease', '-1'] : ['SpecificDisease', 'D002'];
    lines.push(`${pmid}|t|Gout in a patient.`, `${pmid}|a|Nothing else.`, `${pmid}\t0\t4\tGout\t${type}\t${id}`, '');
  }
  const file = join(mkdtempSync(join(tmpdir(), 'cuilink-split-')), 'corpus.txt');
  writeFileSync(file, lines.join('\n'));
  const everyId = lines.filter((l) => l.includes('|t|')).map((l) => l.split('|')[0]!);
  const tune = tuneDocumentIds(everyId);

  const specific = await loadPubTatorCorpus(file, { types: /^SpecificDisease$/ });
  keepSplitPart(specific, 'tune', 20261123);
  assert.ok(specific.notes.length > 0);
  for (const note of specific.notes) assert.ok(tune.has(note.noteId), `${note.noteId} is not in the file's tune part`);
  assert.equal(specific.notes.length, [...tune].filter((id) => ((Number(id) - 7_000_000) / 13) % 3 === 2).length);

  const learned = await labelledMentionsFromPubTator(file, { split: 'learn', types: /^SpecificDisease$/ });
  assert.ok(learned.length > 0);
  for (const m of learned) assert.ok(!tune.has(m.record.noteId!), `memory add --split learn took tune document ${m.record.noteId}`);
});
