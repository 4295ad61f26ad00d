import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Hierarchy } from '../../src/kb/hierarchy.ts';
import { loadKb } from '../../src/kb/load.ts';

// The real vocabularies live outside the repo (../shared/data, see each PROVENANCE.md); counts
// below are the ones stated there.
const DATA = resolve(process.env.CUILINK_SHARED_DATA ?? '../shared/data');
const skip = existsSync(DATA) ? false : `shared data not found at ${DATA} (set CUILINK_SHARED_DATA to run this test)`;

function near(actual: number, expected: number, tolerance: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= expected * tolerance, `${what}: ${actual}, expected about ${expected}`);
}

test('CTD MEDIC (2017): 11,865 concepts, 66,129 synonyms, 5,487 with alt ids', { skip }, async () => {
  const store = await loadKb([`${DATA}/medic/CTD_diseases.tsv.gz`]);
  assert.equal(store.size, 11_865);
  assert.equal(store.nameCount, 11_865 + 66_129);
  const concepts = [...store];
  assert.equal(concepts.filter((c) => c.id.startsWith('MESH:')).length, 11_333);
  assert.equal(concepts.filter((c) => c.id.startsWith('OMIM:')).length, 532);
  near(concepts.filter((c) => c.altIds.length > 0).length, 5_487, 0.01, 'concepts with alt ids');
  const t2 = store.get('D003924')!;
  assert.equal(t2.name, 'Diabetes Mellitus, Type 2');
  assert.ok(t2.parents.includes('MESH:D003920'));
  const h = Hierarchy.fromStore(store);
  assert.equal(h.pathLength('MESH:D003924', 'MESH:D003920'), 1);
  assert.equal(h.pathLength('MESH:D003924', 'MESH:D003922'), 2, 'type 1 and type 2 diabetes are siblings');
});

test('MEDIC 2012 BioSyn dictionary: 11,915 concepts, 76,237 names, 14,942 ids', { skip }, async () => {
  const store = await loadKb([`${DATA}/medic/medic_06Jul2012.txt.gz`]);
  assert.equal(store.size, 11_915);
  assert.equal(store.nameCount, 76_237);
  // 14,943 ids are written; 260350, listed as an alt id of D010190, is also a concept of its own and stays only that.
  assert.equal([...store].reduce((n, c) => n + 1 + c.altIds.length, 0), 14_942);
  assert.ok(!store.get('MESH:D010190')!.altIds.includes('OMIM:260350'));
});

test('MEDIC 2017 + the 2012 release as a supplement: the 76 retired concepts NCBI-disease gold uses, nothing else', { skip }, async () => {
  const added: number[] = [];
  const store = await loadKb([`${DATA}/medic/CTD_diseases.tsv.gz`], { supplements: [`${DATA}/medic/medic_06Jul2012.txt.gz`], onFile: (_p, _f, n) => added.push(n) });
  assert.deepEqual(added, [11_865, 76]);
  assert.equal(store.size, 11_865 + 76);
  assert.equal(store.get('OMIM:613825')?.name, 'COMPLEMENT COMPONENT 9 DEFICIENCY', 'retired since 2012 (gold of "C9 deficiency")');
  assert.equal(store.get('MESH:C538554')?.name, 'diminished GALC activity');
  assert.equal(store.get('OMIM:202400')?.id, 'MESH:D000347');
  assert.equal(store.get('MESH:C531603'), undefined, '2012 lists C531603 as an alt id of OMIM:202400, which 2017 keeps as an alt id of Afibrinogenemia: not added');
  const d003924 = store.get('MESH:D003924')!;
  const fresh = await loadKb([`${DATA}/medic/CTD_diseases.tsv.gz`]);
  assert.deepEqual(d003924.synonyms, fresh.get('MESH:D003924')!.synonyms, 'a concept 2017 has keeps its own names');
});

test('MEDIC 2017 with DOID and HPO as xref-name sources: names MEDIC lacks, on the one concept each term leads to', { skip }, async () => {
  const named: number[] = [];
  const store = await loadKb([`${DATA}/medic/CTD_diseases.tsv.gz`], { xrefNameSources: [`${DATA}/doid/doid.obo.gz`, `${DATA}/hpo/hp.json.gz`], onFile: (_p, _f, n) => named.push(n) });
  assert.equal(store.size, 11_865, 'no concept added');
  assert.equal(named[0], 11_865);
  assert.ok(named[1]! > 3_000 && named[2]! > 1_000, `concepts given names: ${named.join(', ')}`);
  assert.ok(store.get('MESH:D007674')!.xrefNames!.includes('nephropathy'), "DOID's kidney disease, a MEDIC alt id of Kidney Diseases");
  assert.ok(store.get('MESH:D009133')!.xrefNames!.includes('Muscle wasting'), "HPO's Skeletal muscle atrophy, by its MeSH xref");
  assert.ok(![...store].some((c) => (c.xrefNames ?? []).some((n) => [c.name, ...c.synonyms].some((own) => own.toLowerCase() === n.toLowerCase()))), 'never a name the concept has');
});

test('DOID 2024-01-31: 11,501 live terms, UMLS xrefs normalized', { skip }, async () => {
  const store = await loadKb([`${DATA}/doid/doid.obo.gz`]);
  assert.equal(store.size, 11_501);
  const concepts = [...store];
  near(concepts.filter((c) => c.xrefs.some((x) => x.startsWith('UMLS:'))).length, 6_332, 0.01, 'terms with a UMLS xref');
  near(concepts.reduce((n, c) => n + c.parents.length, 0), 15_995, 0.02, 'is_a links');
  const t2 = store.get('DOID:9352')!;
  assert.equal(t2.name, 'type 2 diabetes mellitus');
  assert.ok(t2.xrefs.includes('UMLS:C0011860') && t2.xrefs.includes('MESH:D003924'));
});

test('HPO 2023-01-27 OBO-Graph JSON: 16,874 live classes, 21,138 is_a edges', { skip }, async () => {
  const store = await loadKb([`${DATA}/hpo/hp.json.gz`]);
  assert.equal(store.size, 16_874);
  const concepts = [...store];
  near(concepts.reduce((n, c) => n + c.parents.length, 0), 21_138, 0.03, 'is_a links from live classes');
  near(concepts.filter((c) => c.xrefs.some((x) => x.startsWith('UMLS:'))).length, 11_558, 0.01, 'classes with a UMLS xref');
  assert.equal(store.get('HP_0001250')?.name, 'Seizure');
  assert.equal(store.get('HP:0001275')?.id, 'HP:0001250', 'alt id resolves');
});

// Speed is reported here, never asserted (a shared CI machine is no timer); bars live in bench/.
test('hierarchy on MEDIC: random pathLength queries find the common root', { skip }, async (ctx) => {
  const store = await loadKb([`${DATA}/medic/CTD_diseases.tsv.gz`]);
  const h = Hierarchy.fromStore(store);
  const ids = [...store].map((c) => c.id);
  let state = 42;
  const next = () => ids[(state = (state * 1103515245 + 12345) % 2 ** 31) % ids.length]!;
  const queries = 100_000;
  const started = performance.now();
  let finite = 0;
  for (let i = 0; i < queries; i++) if (Number.isFinite(h.pathLength(next(), next()))) finite++;
  const perSecond = queries / ((performance.now() - started) / 1000);
  assert.ok(finite > queries * 0.9, `${finite} of ${queries} random pairs connected (all MEDIC hangs under MESH:C)`);
  ctx.diagnostic(`MEDIC pathLength: ${Math.round(perSecond)} random queries/s (cold cache)`);
});
