import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { InputError } from '../../../src/kb/errors.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { activateMemoryVersion, resolveMemoryDir } from '../../../src/retrieve/memory-root.ts';
import type { NewMemoryRecord } from '../../../src/retrieve/memory-record.ts';
import { Linker } from '../../../src/link/linker.ts';
import { MemoryEvidence } from '../../../src/link/memory-evidence.ts';
import { MemoryWatcher } from '../../../src/link/memory-watcher.ts';
import { parseLinkConfig, type LinkConfigInput } from '../../../src/link/link-config.ts';
import type { LinkedMention, NoteInput } from '../../../src/link/types.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

const encoder = new TrigramEncoder();
const MODEL = { id: 'test-trigram-encoder', sha256: 'd'.repeat(64), dims: encoder.dims };
let root: string;
let index: LinkIndex;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-memory-'));
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder,
    model: { path: 'm', sha256: MODEL.sha256, precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false,
  });
  index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
});
after(() => rmSync(root, { recursive: true, force: true }));

const label = (text: string, ...ids: string[]): NewMemoryRecord => ({ text, label: 'Disease', ids, source: 'test', time: 1 });

function memoryOf(records: NewMemoryRecord[]): MemoryStore {
  const store = MemoryStore.empty(MODEL, lowerNormalize);
  store.add(records, records.map((r) => encoder.vector(r.text)));
  return store;
}

function linker(memory: { current(): MemoryEvidence | undefined } | undefined, config: LinkConfigInput = {}, exclude?: ReadonlySet<string>) {
  return new Linker({
    index, retriever: new CandidateRetriever(index), encoder,
    biEncoderQuery: (_text, m, override) => override ?? m.text,
    rerankQuery: (_text, m) => m.text,
    findAbbreviations: () => new Map(),
    config: parseLinkConfig({ rerank: { policy: 'never' }, ...config }),
    versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: index.manifest.indexVersion },
    memory,
    exclude,
    release: async () => {},
  });
}

async function linkOne(store: MemoryStore | undefined, mention: string, config: LinkConfigInput = {}): Promise<LinkedMention> {
  const parsed = parseLinkConfig(config);
  const evidence = store ? new MemoryEvidence(store, index, parsed.memory) : undefined;
  const text = `Seen: ${mention}.`;
  const n: NoteInput = { noteId: 'n', text, mentions: [{ id: 'm', start: 6, end: 6 + mention.length, text: mention, label: 'Disease' }] };
  const [out] = await linker(evidence && { current: () => evidence }, config).linkNotes([n]);
  return out!.mentions[0]!;
}

test('a label for a surface the KB does not know decides the link and says so', async () => {
  const without = await linkOne(undefined, 'zorbitis xq');
  assert.notEqual(without.conceptId, 'MESH:D003920');
  const m = await linkOne(memoryOf([label('zorbitis xq', 'MESH:D003920')]), 'zorbitis xq');
  assert.equal(m.conceptId, 'MESH:D003920');
  assert.equal(m.memoryDecided, true);
  assert.equal(m.memorySupport, 1);
  assert.equal(m.candidates[0]!.conceptId, 'MESH:D003920');
});

test('conflicting labels: one label cannot take a surface from the concept owning its exact KB name; with kbVotes 1 two can', async () => {
  // "MI" is an exact name of Myocardial Infarction.
  const one = await linkOne(memoryOf([label('MI', 'MESH:D006973')]), 'MI', { memory: { kbVotes: 1 } });
  assert.equal(one.conceptId, 'MESH:D009203');
  assert.equal(one.memoryDecided, false);
  const two = await linkOne(memoryOf([label('MI', 'MESH:D006973'), label('MI', 'MESH:D006973')]), 'MI', { memory: { kbVotes: 1 } });
  assert.equal(two.conceptId, 'MESH:D006973');
  assert.equal(two.memoryDecided, true);
  // The default kbVotes (4, chosen on the tune split) makes the KB name worth four labels: two do not flip it, five do.
  const guarded = await linkOne(memoryOf([label('MI', 'MESH:D006973'), label('MI', 'MESH:D006973')]), 'MI');
  assert.equal(guarded.conceptId, 'MESH:D009203');
  const five = await linkOne(memoryOf([1, 2, 3, 4, 5].map(() => label('MI', 'MESH:D006973'))), 'MI');
  assert.equal(five.conceptId, 'MESH:D006973');
});

test('conflicting labels: one mislabel does not flip a well-attested surface, and a 1 : 1 split decides nothing', async () => {
  const attested = [1, 2, 3, 4].map(() => label('sugar sickness', 'MESH:D003920'));
  const m = await linkOne(memoryOf([...attested, label('sugar sickness', 'MESH:D006973')]), 'sugar sickness');
  assert.equal(m.conceptId, 'MESH:D003920');
  assert.equal(m.memoryDecided, true);
  assert.equal(m.memorySupport, 4);
  const split = await linkOne(memoryOf([label('sugar sickness', 'MESH:D003920'), label('sugar sickness', 'MESH:D006973')]), 'sugar sickness');
  assert.equal(split.memoryDecided, false);
  // The minimum support holds back a lone label even where nothing contradicts it.
  const lone = await linkOne(memoryOf([label('sugar sickness', 'MESH:D003920')]), 'sugar sickness', { memory: { minSupport: 2 } });
  assert.equal(lone.memoryDecided, false);
});

test('composite gold A|B: both ids get the vote; the link goes to one of them, never dropped', async () => {
  const store = memoryOf([label('sugar and pressure disease', 'MESH:D003920', 'MESH:D006973')]);
  assert.deepEqual([...store.surfaceCounts('Sugar and pressure disease')].sort(), [['MESH:D003920', 1], ['MESH:D006973', 1]]);
  const m = await linkOne(store, 'sugar and pressure disease');
  assert.ok(['MESH:D003920', 'MESH:D006973'].includes(m.conceptId!), String(m.conceptId));
  assert.deepEqual(new Set(m.candidates.slice(0, 2).map((c) => c.conceptId)), new Set(['MESH:D003920', 'MESH:D006973']));
});

test('dense prototypes: a near surface (not the same string) votes through the memory HNSW', async () => {
  const store = memoryOf([1, 2, 3].map(() => label('sugar sickness', 'MESH:D003920')));
  const m = await linkOne(store, 'sugar sicknesses', { memory: { denseThreshold: 0.7, denseWeight: 1 } });
  assert.equal(m.conceptId, 'MESH:D003920');
  const off = await linkOne(store, 'sugar sicknesses', { memory: { neighbors: 0 } });
  assert.notEqual(off.conceptId, 'MESH:D003920');
});

test('remove retracts a label; save/open round-trips; the watcher swaps to the new CURRENT between batches', async () => {
  const memRoot = join(root, 'mem');
  const store = memoryOf([label('zorbitis xq', 'MESH:D003920'), label('lung fire', 'MESH:D011014')]);
  const v1 = store.save(memRoot);
  activateMemoryVersion(memRoot, v1.memoryVersion);
  assert.equal(resolveMemoryDir(memRoot).version, v1.memoryVersion);
  const watcher = MemoryWatcher.open({ path: memRoot, index, config: parseLinkConfig({}).memory, normalize: lowerNormalize, modelSha256: MODEL.sha256, pollMs: 0 });
  const l = linker(watcher);
  const n: NoteInput = { noteId: 'n', text: 'zorbitis xq', mentions: [{ id: 'm', start: 0, end: 11, text: 'zorbitis xq', label: 'Disease' }] };
  const [first] = await l.linkNotes([n]);
  assert.equal(first!.mentions[0]!.conceptId, 'MESH:D003920');
  assert.equal(first!.memoryVersion, v1.memoryVersion);
  assert.equal(l.versions.memoryVersion, v1.memoryVersion);

  const reopened = MemoryStore.open(resolveMemoryDir(memRoot).dir, lowerNormalize);
  assert.deepEqual(reopened.list().map((r) => [r.seq, r.text, r.ids]), [[0, 'zorbitis xq', ['MESH:D003920']], [1, 'lung fire', ['MESH:D011014']]]);
  assert.equal(reopened.remove([0]).length, 1);
  assert.equal(reopened.nearest(encoder.vector('zorbitis xq'), 5).some((n) => n.record.seq === 0), false);
  const v2 = reopened.save(memRoot);
  assert.equal(v2.parent, v1.memoryVersion);
  assert.equal(v2.counts.nextSeq, 2);
  assert.equal(watcher.poll(), false, 'CURRENT not flipped yet: nothing to swap');
  activateMemoryVersion(memRoot, v2.memoryVersion);
  assert.equal(watcher.poll(), true);
  const [second] = await l.linkNotes([n]);
  assert.notEqual(second!.mentions[0]!.conceptId, 'MESH:D003920');
  assert.equal(second!.memoryVersion, v2.memoryVersion);
  assert.ok(existsSync(join(memRoot, v1.memoryVersion)), 'old versions stay for rollback');
  // A broken version is reported and skipped; the old one keeps serving.
  const errors: Error[] = [];
  const w2 = MemoryWatcher.open({ path: memRoot, index, config: parseLinkConfig({}).memory, normalize: lowerNormalize, modelSha256: MODEL.sha256, pollMs: 0, onError: (e) => errors.push(e) });
  writeFileSync(join(memRoot, 'CURRENT'), 'no-such-version\n');
  assert.equal(w2.poll(), false);
  assert.equal(errors.length, 1);
  assert.equal(w2.current()?.version, v2.memoryVersion);
  assert.match(readFileSync(join(memRoot, v2.memoryVersion, 'records.jsonl'), 'utf8'), /lung fire/);
});

test('a new version whose file no longer matches its manifest checksum is not swapped in: the old one keeps serving, reported once, until its files change', async () => {
  const memRoot = join(root, 'mem-checksum');
  const store = memoryOf([label('zorbitis xq', 'MESH:D003920')]);
  const v1 = store.save(memRoot).memoryVersion;
  activateMemoryVersion(memRoot, v1);
  const errors: Error[] = [];
  const watcher = MemoryWatcher.open({ path: memRoot, index, config: parseLinkConfig({}).memory, normalize: lowerNormalize, modelSha256: MODEL.sha256, pollMs: 0, onError: (e) => errors.push(e) });
  const l = linker(watcher);
  const n: NoteInput = { noteId: 'n', text: 'zorbitis xq', mentions: [{ id: 'm', start: 0, end: 11, text: 'zorbitis xq', label: 'Disease' }] };

  // v2 retracts the label, then its records rot on disk: one letter of another label changes,
  // still valid JSON with the same counts.
  store.remove([0]);
  store.add([label('lung fire', 'MESH:D011014')], [encoder.vector('lung fire')]);
  const v2 = store.save(memRoot).memoryVersion;
  const records = join(memRoot, v2, 'records.jsonl');
  const sound = readFileSync(records, 'utf8');
  writeFileSync(records, sound.replace('lung fire', 'lung firf'));
  activateMemoryVersion(memRoot, v2);
  assert.equal(watcher.poll(), false, 'not swapped');
  assert.equal(watcher.poll(), false);
  assert.equal(errors.length, 1, 'reported once, not on every poll');
  assert.equal((errors[0] as InputError).code, 'BAD_MEMORY');
  assert.match(errors[0]!.message, /records\.jsonl/);
  assert.match(errors[0]!.message, /sha256/);
  assert.equal(watcher.current()?.version, v1);
  const [out] = await l.linkNotes([n]);
  assert.equal(out!.memoryVersion, v1);
  assert.equal(out!.mentions[0]!.conceptId, 'MESH:D003920', "v1's label still decides");

  // Its file repaired (or a copy between hosts finished after CURRENT was written), v2 is tried again and taken.
  writeFileSync(records, sound);
  assert.equal(watcher.poll(), true, 'a failed version whose files changed is tried again');
  assert.equal(watcher.current()?.version, v2);
  assert.equal(errors.length, 1);

  // The next sound version is taken.
  store.add([label('bone ache', 'MESH:D011014')], [encoder.vector('bone ache')]);
  const v3 = store.save(memRoot).memoryVersion;
  activateMemoryVersion(memRoot, v3);
  assert.equal(watcher.poll(), true);
  assert.equal(watcher.current()?.version, v3);
});

test('labels naming an id outside the KB link to it (outsideKb), unless turned off', async () => {
  const store = memoryOf([label('zorbitis xq', 'OMIM:999999'), label('zorbitis xq', 'OMIM:999999')]);
  const m = await linkOne(store, 'zorbitis xq');
  assert.equal(m.conceptId, 'OMIM:999999');
  assert.equal(m.conceptName, 'OMIM:999999', 'named by its id, never by mention text');
  assert.equal(m.memoryDecided, true);
  assert.equal(m.memorySupport, 2);
  assert.ok(m.candidates.length <= 5);
  // Unanimous votes are no exact KB name: the score is under 1 (its prototype's discounted similarity), and not exact.
  assert.ok(m.score > 0 && m.score < 1, `score ${m.score}`);
  assert.equal(m.candidates[0]!.exact, false);
  assert.equal(m.candidates[0]!.score, m.score);
  const off = await linkOne(store, 'zorbitis xq', { memory: { outsideKb: false } });
  assert.notEqual(off.conceptId, 'OMIM:999999');
  assert.equal(off.memoryDecided, false);
  // An id outside the KB has no semantic types: a label whose concepts must have some never links to one.
  const filtered = await linkOne(store, 'zorbitis xq', { typeFilter: { Disease: ['Disease'] } });
  assert.notEqual(filtered.conceptId, 'OMIM:999999');
  assert.equal(filtered.memoryDecided, false);
});

test('held-out concepts (eval --hold-out): the memory served has none of their labels, as one that never learned them; other ids outside the KB still link', async () => {
  const memRoot = join(root, 'mem-held-out');
  const full = memoryOf([
    // Two labels of a held-out concept, one of a kept one: kept, the two out-voted the one.
    label('sugar sickness', 'MESH:D006973'), label('sugar sickness', 'MESH:D006973'), label('sugar sickness', 'MESH:D003920'),
    // A held-out concept named by its alt id is the same concept.
    label('colon growth', 'MESH:D003110'), label('colon growth', 'MESH:D003110'), label('colon growth', 'MESH:D003920'),
    label('zorbitis xq', 'OMIM:999999'),
  ]);
  activateMemoryVersion(memRoot, full.save(memRoot).memoryVersion);
  const heldOut = new Set(['MESH:D006973', 'MESH:D015179']);
  const options = { path: memRoot, index, config: parseLinkConfig({}).memory, normalize: lowerNormalize, modelSha256: MODEL.sha256, pollMs: 0 };
  const served = linker(MemoryWatcher.open({ ...options, exclude: heldOut }), {}, heldOut);
  const neverLearned = memoryOf([label('sugar sickness', 'MESH:D003920'), label('colon growth', 'MESH:D003920'), label('zorbitis xq', 'OMIM:999999')]);
  const evidence = new MemoryEvidence(neverLearned, index, parseLinkConfig({}).memory);
  const reference = linker({ current: () => evidence }, {}, heldOut);
  const linkText = async (l: Linker, text: string): Promise<LinkedMention> => (await l.linkNotes([{ noteId: 'n', text, mentions: [{ id: 'm', start: 0, end: text.length, text, label: 'Disease' }] }]))[0]!.mentions[0]!;
  for (const text of ['sugar sickness', 'colon growth', 'zorbitis xq']) {
    const got = await linkText(served, text);
    assert.equal(got.memoryDecided, true, text);
    assert.deepEqual(got, await linkText(reference, text), text);
    assert.ok(!got.candidates.some((c) => heldOut.has(c.conceptId)), text);
  }
  assert.equal((await linkText(served, 'sugar sickness')).conceptId, 'MESH:D003920');
  // The one served without --hold-out still has every label.
  assert.equal((await linkText(linker(MemoryWatcher.open(options)), 'sugar sickness')).conceptId, 'MESH:D006973');
});

test('forgetConcepts: a composite keeps its other ids, a record of none leaves the prototypes, and such a copy is never saved', () => {
  const store = memoryOf([label('sugar and pressure disease', 'MESH:D003920', 'MESH:D006973'), label('high pressure', 'MESH:D006973'), label('high pressure', 'MESH:D006973')]);
  assert.equal(store.forgetConcepts((id) => id === 'MESH:D006973'), 3);
  assert.deepEqual([...store.surfaceCounts('sugar and pressure disease')], [['MESH:D003920', 1]]);
  assert.equal(store.surfaceCounts('high pressure').size, 0);
  assert.equal(store.conceptCount('MESH:D006973'), 0);
  assert.equal(store.maxConceptCount, 1);
  assert.deepEqual(store.nearest(encoder.vector('high pressure'), 5).map((n) => n.record.ids), [['MESH:D003920']]);
  assert.throws(() => store.save(join(root, 'mem-forgot')), /forgot some concepts' labels .*never saved/);
  assert.equal(existsSync(join(root, 'mem-forgot')), false);
});

test('votes break ties without moving a score: an exact name keeps 1 and nothing rises over it', async () => {
  // minSupport 100: the labels never decide, so only the tie-break reads them.
  const store = memoryOf([label('diabetes', 'MESH:D003920'), label('diabetes', 'MESH:D003920'), label('type 2 diabetes', 'MESH:D003924')]);
  const m = await linkOne(store, 'diabetes', { memory: { minSupport: 100, bonus: 0.5, prior: 0.5 } });
  assert.equal(m.memoryDecided, false);
  assert.ok(m.candidates.length >= 2, 'the tie-break had candidates to order');
  assert.equal(m.conceptId, 'MESH:D003920');
  assert.equal(m.score, 1);
  assert.equal(m.candidates[0]!.exact, true);
  for (const c of m.candidates.slice(1)) assert.ok(c.score < 1, `${c.conceptId} scores ${c.score}`);
});
