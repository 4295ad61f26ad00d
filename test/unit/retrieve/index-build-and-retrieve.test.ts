import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { NameTable } from '../../../src/retrieve/name-table.ts';
import { ExactMatchTable } from '../../../src/retrieve/exact-match-table.ts';
import { nameLookups, phraseLookups } from '../../../src/link/linking-stages.ts';
import { LooseMatchTable } from '../../../src/retrieve/loose-match-table.ts';
import { looseKey, unqualifiedKey } from '../../../src/text/loose-key.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';
import { InputError } from '../../../src/kb/errors.ts';

async function build(dir: string, encoder = new TrigramEncoder()) {
  return buildIndex({
    concepts: FIXTURE_CONCEPTS,
    kbSources: ['fixture.jsonl'],
    kbChecksum: 'a'.repeat(64),
    encoder,
    model: { path: 'models/test', sha256: 'b'.repeat(64), precision: 'fp32' },
    normalize: lowerNormalize,
    outDir: dir,
    chunkSize: 4,
    progress: false,
  });
}

test('name table keeps one row per distinct normalized name of a concept', () => {
  const table = NameTable.fromConcepts([{ id: 'X:1', name: 'Flu', synonyms: ['flu', 'FLU ', 'influenza'], semanticTypes: [], parents: [], xrefs: [], altIds: [] }], lowerNormalize);
  assert.deepEqual(table.names, ['Flu', 'influenza']);
  assert.deepEqual(Array.from(table.conceptIndexOf), [0, 0]);
});

test('exact table maps a shared name to every concept that has it, once each', () => {
  const concepts = [
    { id: 'A:1', name: 'cold', synonyms: ['Cold'], semanticTypes: [], parents: [], xrefs: [], altIds: [] },
    { id: 'A:2', name: 'common cold', synonyms: ['cold'], semanticTypes: [], parents: [], xrefs: [], altIds: [] },
  ];
  const exact = ExactMatchTable.fromConcepts(concepts, lowerNormalize);
  assert.deepEqual(exact.lookup('COLD'), [0, 1]);
  assert.deepEqual(exact.lookup('flu'), []);
});

test('index build writes a complete versioned directory that opens and retrieves', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-index-'));
  try {
    const dir = join(root, 'idx');
    const encoder = new TrigramEncoder();
    const manifest = await build(dir, encoder);
    assert.equal(manifest.counts.concepts, FIXTURE_CONCEPTS.length);
    const expectedNames = FIXTURE_CONCEPTS.reduce((n, c) => n + 1 + c.synonyms.length, 0);
    assert.equal(manifest.counts.names, expectedNames);
    assert.ok(encoder.calls >= Math.ceil(expectedNames / 4), 'names are encoded in chunks');
    assert.deepEqual(readdirSync(dir).sort(), ['concepts.jsonl', 'manifest.json', 'names.hnsw', 'names.json']);
    assert.equal(readdirSync(root).length, 1, 'no staging directory left behind');

    const index = await LinkIndex.open(dir, lowerNormalize);
    assert.equal(index.concepts.length, FIXTURE_CONCEPTS.length);
    assert.equal(index.indexOf('MESH:D003110'), index.indexOf('MESH:D015179'), 'alt ids resolve to their concept');
    const retriever = new CandidateRetriever(index);

    const exactHits = retriever.retrieve(['Heart Attack'], encoder.vector('Heart Attack'), { k: 3 });
    assert.equal(index.concepts[exactHits[0]!.conceptIndex]!.id, 'MESH:D009203');
    assert.equal(exactHits[0]!.exact, true);
    assert.deepEqual([exactHits[0]!.via, exactHits[0]!.similarity], ['exact', 1]);
    assert.equal(exactHits[0]!.score, 1);
    assert.equal(new Set(exactHits.map((h) => h.conceptIndex)).size, exactHits.length, 'one hit per concept');

    const fuzzy = retriever.retrieve(['hypertensive'], encoder.vector('hypertensive'), { k: 3 });
    assert.equal(index.concepts[fuzzy[0]!.conceptIndex]!.id, 'MESH:D006973');
    assert.equal(fuzzy[0]!.exact, false);
    assert.ok(fuzzy[0]!.score < 1 && fuzzy[0]!.score > 0);
    for (let i = 1; i < fuzzy.length; i++) assert.ok(fuzzy[i - 1]!.score >= fuzzy[i]!.score, 'sorted by score');

    const chemicalsOnly = (ci: number) => index.concepts[ci]!.semanticTypes.includes('Chemical');
    const filtered = retriever.retrieve(['diabetes'], encoder.vector('diabetes'), { k: 5, allow: chemicalsOnly });
    assert.ok(filtered.length > 0);
    assert.ok(filtered.every((h) => chemicalsOnly(h.conceptIndex)), 'the filter applies to exact and dense hits');

    // Second chances: the loose key, eponym head nouns, composite readings, inventory senses.
    const loose = new LooseMatchTable(index.concepts, looseKey);
    const idOf = (hits: { conceptIndex: number }[]) => index.concepts[hits[0]!.conceptIndex]!.id;
    const cascade = (o: { loose: LooseMatchTable; unqualified?: boolean; inheritance?: boolean; readings?: string[]; senses?: string[] }) => ({
      lookups: nameLookups({ exact: index.exact, loose: o.loose }, { loose: true, xrefNames: false, headNouns: [], inheritance: o.inheritance ?? false, unqualified: o.unqualified ?? false }),
      readings: o.readings,
      readingLookups: phraseLookups({ exact: index.exact, loose: o.loose }, true),
      senses: o.senses,
      senseLookups: phraseLookups({ exact: index.exact, loose: o.loose }, true),
    });
    const inverted = retriever.retrieve(['type II diabetes'], encoder.vector('type II diabetes'), { k: 3, ...cascade({ loose }) });
    assert.equal(idOf(inverted), 'MESH:D003924');
    assert.deepEqual([inverted[0]!.via, inverted[0]!.exact, inverted[0]!.lexical], ['loose', false, true], 'a loose match ranks as a name match but is not exact');
    assert.ok(inverted[0]!.similarity < 1 && inverted[0]!.similarity > 0, 'its similarity is the real cosine, not 1');
    assert.equal(retriever.retrieve(['type II diabetes'], encoder.vector('type II diabetes'), { k: 3 })[0]!.exact, false, 'strict table alone has no match');
    const readings = retriever.retrieve(['colorectal and lung cancer'], encoder.vector('colorectal and lung cancer'), { k: 3, ...cascade({ loose, readings: ['colorectal cancer', 'lung cancer'] }) });
    assert.equal(idOf(readings), 'MESH:D015179');
    assert.deepEqual([readings[0]!.via, readings[0]!.exact, readings[0]!.lexical], ['composite', false, true]);
    // Third chance: a name that differs only by qualifier words, never for a disjunction.
    const qualified = new LooseMatchTable(
      index.concepts.map((c) => (c.id === 'MESH:D015179' ? { ...c, synonyms: [...c.synonyms, 'Hereditary Colorectal and Lung Cancer Syndrome'] } : c)),
      looseKey,
      unqualifiedKey,
    );
    const combined = retriever.retrieve(['colorectal-lung cancer'], encoder.vector('colorectal-lung cancer'), { k: 3, ...cascade({ loose: qualified, unqualified: true }) });
    assert.equal(idOf(combined), 'MESH:D015179');
    assert.deepEqual([combined[0]!.via, combined[0]!.exact], ['unqualified', false]);
    assert.ok(!retriever.retrieve(['colorectal-lung cancer'], encoder.vector('colorectal-lung cancer'), { k: 3, ...cascade({ loose: qualified }) })[0]!.lexical, 'off unless asked');
    assert.ok(!retriever.retrieve(['colorectal or lung cancer'], encoder.vector('colorectal or lung cancer'), { k: 3, ...cascade({ loose: qualified, unqualified: true }) })[0]!.lexical, 'not for "X or Y"');
    assert.deepEqual(loose.lookupUnqualified('colorectal lung cancer'), [], 'a table without an unqualified key has none');
    // A mode of inheritance reads as "hereditary" on the mention's side only.
    const inherited = new LooseMatchTable(
      index.concepts.map((c) =>
        c.id === 'MESH:D006937' ? { ...c, synonyms: [...c.synonyms, 'Hereditary Hypercholesterolemia'] } : c.id === 'MESH:D011014' ? { ...c, synonyms: [...c.synonyms, 'Asthma, Autosomal Recessive'] } : c,
      ),
      looseKey,
    );
    const adh = 'autosomal dominant hypercholesterolemia';
    const hereditary = retriever.retrieve([adh], encoder.vector(adh), { k: 3, ...cascade({ loose: inherited, inheritance: true }) });
    assert.equal(idOf(hereditary), 'MESH:D006937');
    assert.deepEqual([hereditary[0]!.via, hereditary[0]!.exact], ['inheritance', false]);
    assert.ok(!retriever.retrieve([adh], encoder.vector(adh), { k: 3, ...cascade({ loose: inherited }) })[0]!.lexical, 'off unless asked');
    const hereditaryAsthma = retriever.retrieve(['hereditary asthma'], encoder.vector('hereditary asthma'), { k: 3, ...cascade({ loose: inherited, inheritance: true }) });
    assert.ok(!hereditaryAsthma.some((h) => h.lexical), 'a KB name keeps its mode: "hereditary asthma" is not "Asthma, Autosomal Recessive"');
    const senses = retriever.retrieve(['HTN'], encoder.vector('HTN'), { k: 5, ...cascade({ loose, senses: ['high blood pressure'] }) });
    const htn = senses.find((h) => index.concepts[h.conceptIndex]!.id === 'MESH:D006973');
    assert.ok(htn && htn.via === 'inventory' && !htn.exact && htn.score === Math.max(...senses.map((h) => h.score)), 'a sense joins the candidates at the best dense score');

    const again = retriever.retrieve(['hypertensive'], encoder.vector('hypertensive'), { k: 3 });
    assert.deepEqual(again, fuzzy, 'same query, same index, same answer');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('building over an existing directory is refused unless overwrite is set', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-index-'));
  try {
    const dir = join(root, 'idx');
    await build(dir);
    await assert.rejects(build(dir), (e: unknown) => e instanceof InputError && /already exists/.test(e.message));
    assert.ok(existsSync(join(dir, 'manifest.json')));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('opening a directory that is not an index names the file and the reason', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-index-'));
  try {
    await assert.rejects(LinkIndex.open(root, lowerNormalize), (e: unknown) => e instanceof InputError && e.message.includes('manifest.json') && /cuilink index build/.test(e.message));
    writeFileSync(join(root, 'manifest.json'), JSON.stringify({ formatVersion: 1 }));
    await assert.rejects(LinkIndex.open(root, lowerNormalize), (e: unknown) => e instanceof InputError && /field 'indexVersion'/.test(e.message));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a root over the whole ontology (MEDIC MESH:C "Diseases") is never a candidate; a root over a small branch is', async () => {
  const { ontologyRoots } = await import('../../../src/retrieve/candidate-retriever.ts');
  const c = (id: string, name: string, parents: string[] = []) => ({ id, name, synonyms: [], semanticTypes: ['Disease'], parents, xrefs: [], altIds: [] });
  const concepts = [c('MESH:C', 'Diseases'), c('MESH:D1', 'Diabetes', ['MESH:C']), c('MESH:D2', 'Type 2 diabetes', ['MESH:D1']), c('MESH:D3', 'Asthma', ['MESH:C']), c('MESH:D4', 'Lone disease')];
  assert.deepEqual([...ontologyRoots(concepts)], [0]);
  assert.deepEqual([...ontologyRoots(FIXTURE_CONCEPTS)], [], 'Diabetes Mellitus, parent of one of ten, stays linkable');
  const root = mkdtempSync(join(tmpdir(), 'cuilink-roots-'));
  try {
    const dir = join(root, 'idx');
    const encoder = new TrigramEncoder();
    await buildIndex({ concepts, kbSources: ['roots.jsonl'], kbChecksum: 'c'.repeat(64), encoder, model: { path: 'models/test', sha256: 'b'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: dir, progress: false });
    const index = await LinkIndex.open(dir, lowerNormalize);
    const retriever = new CandidateRetriever(index);
    const hits = retriever.retrieve(['Diseases'], encoder.vector('Diseases'), { k: 5 });
    assert.ok(hits.length > 0);
    assert.ok(hits.every((h) => index.concepts[h.conceptIndex]!.id !== 'MESH:C'), 'not even on an exact name match');
    const sense = retriever.retrieve(['Dz'], encoder.vector('Dz'), { k: 5, senses: ['diseases'], senseLookups: [(t: string) => index.exact.lookup(t)] });
    assert.ok(sense.every((h) => index.concepts[h.conceptIndex]!.id !== 'MESH:C'), 'nor as an abbreviation inventory sense');
    assert.equal(index.indexOf('MESH:C'), 0, 'still in the KB (hierarchy, metrics)');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a build removes what an interrupted build on this host left (its process gone), and only that', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-abandoned-'));
  try {
    const out = join(root, 'idx');
    // A pid that was ours a moment ago and is gone now.
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(child.stdout);
    const staging = (name: string, builder?: object) => {
      const dir = `${out}.building-${name}`;
      mkdirSync(dir);
      writeFileSync(join(dir, 'names.hnsw'), 'half written');
      if (builder) writeFileSync(join(dir, 'builder.json'), JSON.stringify(builder));
    };
    staging('abandoned', { host: hostname(), pid: deadPid });
    staging('running', { host: hostname(), pid: process.pid });
    staging('other-host', { host: `${hostname()}-elsewhere`, pid: deadPid });
    staging('unmarked');
    await build(out);
    assert.deepEqual(readdirSync(root).sort(), ['idx', 'idx.building-other-host', 'idx.building-running', 'idx.building-unmarked']);
    assert.ok(!existsSync(join(out, 'builder.json')), 'the mark is no part of the index');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a sole builder (the index-build Job) also removes what builds on other hosts left, and unmarked staging, but never a live build of this host', async () => {
  // A retried Job pod is another host: the staging directory of the pod that was killed had no other owner.
  const root = mkdtempSync(join(tmpdir(), 'cuilink-sole-builder-'));
  try {
    const out = join(root, 'idx');
    const staging = (name: string, builder?: object) => {
      const dir = `${out}.building-${name}`;
      mkdirSync(dir);
      writeFileSync(join(dir, 'names.hnsw'), 'half written');
      if (builder) writeFileSync(join(dir, 'builder.json'), JSON.stringify(builder));
    };
    staging('cuilink-index-build-x7k2p-1', { host: 'cuilink-index-build-x7k2p', pid: 1 });
    staging('unmarked');
    staging('running', { host: hostname(), pid: process.pid });
    mkdirSync(join(root, 'other.building-elsewhere-1'));
    await buildIndex({
      concepts: FIXTURE_CONCEPTS, kbSources: ['fixture.jsonl'], kbChecksum: 'a'.repeat(64), encoder: new TrigramEncoder(),
      model: { path: 'models/test', sha256: 'b'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: out, progress: false, soleBuilder: true,
    });
    assert.deepEqual(readdirSync(root).sort(), ['idx', 'idx.building-running', 'other.building-elsewhere-1']);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("a build never touches another host's staging or replaced directory, even one whose builder has this process's pid", async () => {
  // Two hosts on a shared volume run their builders with the same pid (containers start at 1).
  const root = mkdtempSync(join(tmpdir(), 'cuilink-same-pid-'));
  try {
    const out = join(root, 'idx');
    await build(out);
    const theirs = (mark: string) => {
      const dir = `${out}${mark}${process.pid}`;
      mkdirSync(dir);
      writeFileSync(join(dir, 'names.hnsw'), 'being written on the other host');
      writeFileSync(join(dir, 'builder.json'), JSON.stringify({ host: `${hostname()}-elsewhere`, pid: process.pid }));
      return dir;
    };
    const building = theirs('.building-');
    const replaced = theirs('.replaced-');
    await buildIndex({
      concepts: FIXTURE_CONCEPTS, kbSources: ['fixture.jsonl'], kbChecksum: 'a'.repeat(64), encoder: new TrigramEncoder(),
      model: { path: 'models/test', sha256: 'b'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: out, overwrite: true, progress: false,
    });
    for (const dir of [building, replaced]) assert.ok(existsSync(join(dir, 'names.hnsw')), `${dir} is left alone`);
    assert.ok(existsSync(join(out, 'manifest.json')));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('an index whose names.hnsw holds vectors of other dims than its manifest is refused as BAD_INDEX', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-index-'));
  try {
    await build(join(root, 'idx'), new TrigramEncoder(64));
    await build(join(root, 'narrow'), new TrigramEncoder(32));
    // Same names, so the vector count matches: only the dims tell the two files apart. The file
    // checksums would refuse it first (index-checksums.test.ts); an index built before them has none.
    copyFileSync(join(root, 'narrow', 'names.hnsw'), join(root, 'idx', 'names.hnsw'));
    const manifestFile = join(root, 'idx', 'manifest.json');
    const { checksums: _recorded, ...withoutChecksums } = JSON.parse(readFileSync(manifestFile, 'utf8')) as Record<string, unknown>;
    writeFileSync(manifestFile, JSON.stringify(withoutChecksums));
    await assert.rejects(LinkIndex.open(join(root, 'idx'), lowerNormalize), (e: unknown) => e instanceof InputError && e.code === 'BAD_INDEX' && /32 dims/.test(e.message) && /64/.test(e.message));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the old index a killed --force build left moved aside (DIR.replaced-<host>-<pid>) is removed once DIR holds a whole index: this host\'s dead builds always, other hosts\' with soleBuilder', async () => {
  // Killed after moving the new index in, before deleting the old one: a whole old index stays beside DIR for good.
  const root = mkdtempSync(join(tmpdir(), 'cuilink-replaced-'));
  try {
    const out = join(root, 'idx');
    await build(out);
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const deadPid = Number(child.stdout);
    const host = hostname().replace(/[^A-Za-z0-9.-]/g, '_');
    const movedAside = (tag: string) => {
      const dir = `${out}.replaced-${tag}`;
      mkdirSync(dir);
      copyFileSync(join(out, 'manifest.json'), join(dir, 'manifest.json'));
      return dir;
    };
    movedAside(`${host}-${deadPid}`);
    movedAside(`${host}-${process.pid}`);
    movedAside('cuilink-index-build-x7k2p-1');
    const again = (soleBuilder: boolean) =>
      buildIndex({
        concepts: FIXTURE_CONCEPTS, kbSources: ['fixture.jsonl'], kbChecksum: 'a'.repeat(64), encoder: new TrigramEncoder(),
        model: { path: 'models/test', sha256: 'b'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: out, overwrite: true, progress: false, soleBuilder,
      });
    // This process's own tag was a dead process's (a restarted container is pid 1 again): this build's rename needs the name.
    await again(false);
    assert.deepEqual(readdirSync(root).sort(), ['idx', 'idx.replaced-cuilink-index-build-x7k2p-1']);
    await again(true);
    assert.deepEqual(readdirSync(root).sort(), ['idx']);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('while DIR is missing, an old index moved aside by a build killed between its two renames is the only whole one: no build removes it', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-replaced-only-'));
  try {
    const out = join(root, 'idx');
    await build(out);
    const aside = `${out}.replaced-cuilink-index-build-x7k2p-1`;
    renameSync(out, aside);
    await buildIndex({
      concepts: FIXTURE_CONCEPTS, kbSources: ['fixture.jsonl'], kbChecksum: 'a'.repeat(64), encoder: new TrigramEncoder(),
      model: { path: 'models/test', sha256: 'b'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: out, progress: false, soleBuilder: true,
    });
    assert.ok(existsSync(join(aside, 'manifest.json')), 'checked for DIR before this build made it');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
