// A memory without raw text (`memory add --no-raw-text`, docs/memory.md): records hold keyed hashes
// of the normalized surface and note id, the ids and the vectors; every reader works from those.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { activateMemoryVersion, resolveMemoryDir } from '../../../src/retrieve/memory-root.ts';
import type { NewMemoryRecord } from '../../../src/retrieve/memory-record.ts';
import { Linker } from '../../../src/link/linker.ts';
import { MemoryEvidence } from '../../../src/link/memory-evidence.ts';
import { MemoryLearner, publishMemory } from '../../../src/link/memory-learner.ts';
import { parseLinkConfig } from '../../../src/link/link-config.ts';
import type { BiEncoder } from '../../../src/encode/bi-encoder.ts';
import type { LinkedMention, NoteInput } from '../../../src/link/types.ts';
import { memoryErase } from '../../../src/cli/commands/memory-erase.ts';
import { memoryExport, memoryRemove } from '../../../src/cli/commands/memory.ts';
import { labelledMentionsFromJsonl } from '../../../src/eval/memory-sources.ts';
import { normalizeName } from '../../../src/text/normalize.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

const encoder = new TrigramEncoder();
const MODEL = { id: 'test-trigram-encoder', sha256: 'd'.repeat(64), dims: encoder.dims };
let root: string;
let index: LinkIndex;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-memory-noraw-'));
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder,
    model: { path: 'm', sha256: MODEL.sha256, precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false,
  });
  index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
});
after(() => rmSync(root, { recursive: true, force: true }));

const LABELS: NewMemoryRecord[] = [
  { text: 'zorbitis xq', label: 'Disease', ids: ['MESH:D003920'], source: 'test', time: 1, noteId: 'note-7001', mentionId: 'm1', context: 'Pt w/ zorbitis xq since May' },
  { text: 'Zorbitis  XQ', label: 'Disease', ids: ['MESH:D003920'], source: 'test', time: 1, noteId: 'note-7002', mentionId: 'm1' },
  { text: 'lung fire', label: 'Disease', ids: ['MESH:D011014'], source: 'test', time: 1, noteId: 'note-7002', mentionId: 'm2' },
  { text: 'sugar sickness', label: 'Disease', ids: ['MESH:D003920'], source: 'test', time: 1, noteId: 'note-7003', mentionId: 'm1' },
  { text: 'sugar sickness', label: 'Disease', ids: ['MESH:D003920'], source: 'test', time: 1, noteId: 'note-7004', mentionId: 'm1' },
  { text: 'oddity q', label: 'Disease', ids: ['OMIM:999999'], source: 'test', time: 1, noteId: null, mentionId: null },
];
const SECRETS = ['zorbitis', 'Zorbitis', 'lung fire', 'sugar sickness', 'oddity', 'note-700', 'since May'];

function memoryOf(normalize: (s: string) => string, rawText: boolean): MemoryStore {
  const store = MemoryStore.empty(MODEL, normalize, { rawText });
  store.add(LABELS, LABELS.map((r) => encoder.vector(r.text)));
  return store;
}

/** Every file of every version under a root, as text. */
function filesOf(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => readFileSync(join(e.parentPath, e.name)).toString('latin1')).join('\n');
}

async function linkOne(store: MemoryStore, mention: string): Promise<LinkedMention> {
  const config = parseLinkConfig({ rerank: { policy: 'never' }, memory: { denseThreshold: 0.7, denseWeight: 1 } });
  const evidence = new MemoryEvidence(store, index, config.memory);
  const linker = new Linker({
    index, retriever: new CandidateRetriever(index), encoder,
    biEncoderQuery: (_text, m, override) => override ?? m.text,
    rerankQuery: (_text, m) => m.text,
    findAbbreviations: () => new Map(),
    config,
    versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: index.manifest.indexVersion },
    memory: { current: () => evidence },
    release: async () => {},
  });
  const text = `Seen: ${mention}.`;
  const n: NoteInput = { noteId: 'n', text, mentions: [{ id: 'm', start: 6, end: 6 + mention.length, text: mention, label: 'Disease' }] };
  const [linked] = await linker.linkNotes([n]);
  return linked!.mentions[0]!;
}

test('no raw text on disk: no mention, context or note id in any file; the manifest says rawText false and carries the salt', () => {
  const mem = join(root, 'files');
  const store = memoryOf(lowerNormalize, false);
  const manifest = store.save(mem);
  activateMemoryVersion(mem, manifest.memoryVersion);
  const onDisk = filesOf(mem);
  for (const secret of SECRETS) assert.ok(!onDisk.includes(secret), `'${secret}' is on disk`);
  assert.equal(manifest.rawText, false);
  assert.match(manifest.hashSalt!, /^[0-9a-f]{64}$/);
  const record = JSON.parse(readFileSync(join(mem, manifest.memoryVersion, 'records.jsonl'), 'utf8').split('\n')[0]!) as Record<string, unknown>;
  assert.deepEqual(Object.keys(record).sort(), ['ids', 'label', 'mentionId', 'noteHash', 'seq', 'source', 'surfaceHash', 'time']);
  // The raw-text memory of the same labels does hold them (what the option takes away).
  const raw = memoryOf(lowerNormalize, true);
  const rawManifest = raw.save(join(root, 'files-raw'));
  assert.equal(rawManifest.rawText, true);
  assert.ok(filesOf(join(root, 'files-raw')).includes('zorbitis xq'));
  // Two memories hash the same surface differently (own salt): their hashes cannot be matched with each other.
  const other = memoryOf(lowerNormalize, false);
  assert.notEqual(other.surfaceKey('zorbitis xq'), store.surfaceKey('zorbitis xq'));
});

test('lookups still hit: exact surfaces by hash of the normalized mention, neighbours by vector; links equal the raw-text memory’s', async () => {
  const mem = join(root, 'lookups');
  activateMemoryVersion(mem, memoryOf(lowerNormalize, false).save(mem).memoryVersion);
  const hashed = MemoryStore.open(resolveMemoryDir(mem).dir, lowerNormalize);
  const raw = memoryOf(lowerNormalize, true);
  assert.equal(hashed.rawText, false);
  assert.deepEqual([...hashed.surfaceCounts('ZORBITIS xq')], [['MESH:D003920', 2]]);
  assert.equal(hashed.surfaceCount, raw.surfaceCount);
  assert.equal(hashed.conceptCount('MESH:D003920'), 4);
  assert.equal(hashed.nearest(encoder.vector('lung fire'), 1)[0]!.record.seq, 2);
  for (const mention of ['zorbitis xq', 'Zorbitis XQ', 'lung fire', 'sugar sicknesses', 'oddity q', 'diabetes mellitus']) {
    const [a, b] = [await linkOne(raw, mention), await linkOne(hashed, mention)];
    assert.deepEqual([b.conceptId, b.memoryDecided, b.memorySupport, b.candidates.map((c) => c.conceptId)], [a.conceptId, a.memoryDecided, a.memorySupport, a.candidates.map((c) => c.conceptId)], mention);
  }
  assert.equal((await linkOne(hashed, 'zorbitis xq')).conceptId, 'MESH:D003920');
  assert.equal((await linkOne(hashed, 'oddity q')).conceptName, 'OMIM:999999');
});

test('erase still works: note ids matched by their keyed hash, in the store and in older versions on disk', async () => {
  const mem = join(root, 'erase');
  const v1 = publishMemory(memoryOf(normalizeName, false), mem);
  const store = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
  assert.equal(store.recordsOfNotes(['note-7002']).length, 2);
  assert.equal(await memoryErase.run(['--memory', mem, '--note-id', 'note-7002']), 0);
  const after = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
  assert.equal(after.size, LABELS.length - 2);
  assert.equal(after.recordsOfNotes(['note-7002']).length, 0);
  assert.deepEqual([...after.surfaceCounts('lung fire')], []);
  assert.deepEqual([...after.surfaceCounts('zorbitis xq')], [['MESH:D003920', 1]]);
  assert.ok(after.isErased('note-7002') && !after.isErased('note-7001'));
  assert.equal(after.manifest!.hashSalt, store.manifest!.hashSalt, 'the salt is carried: every version hashes alike');
  assert.ok(!readdirSync(mem).includes(v1), 'the version that held the labels is gone');
  assert.ok(!filesOf(mem).includes('note-7002'));
  // A stale copy (an updater's) cannot publish the erased labels again.
  assert.throws(() => publishMemory(store, mem), (e: Error & { code?: string }) => e.code === 'MEMORY_CHANGED');
  assert.equal(MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName).recordsOfNotes(['note-7002']).length, 0);
});

test('erase stops, changing nothing, at a version whose manifest cannot be read: it may hold the notes (it was skipped, and survived the erasure)', async () => {
  const mem = join(root, 'erase-unreadable');
  const v1 = publishMemory(memoryOf(normalizeName, true), mem);
  const next = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
  next.add([{ ...LABELS[0]!, noteId: 'note-7100' }], [encoder.vector(LABELS[0]!.text)]);
  const v2 = publishMemory(next, mem);
  // A hand edit the manifest schema refuses (a records file outside the version).
  const damaged = join(mem, v1, 'manifest.json');
  writeFileSync(damaged, readFileSync(damaged, 'utf8').replace('"records.jsonl"', '"../elsewhere/records.jsonl"'));
  await assert.rejects(memoryErase.run(['--memory', mem, '--note-id', 'note-7002']), (e: Error & { code?: string }) => e.code === 'BAD_MEMORY' && e.message.includes(`${v1}/manifest.json`) && /nothing erased/.test(e.message));
  assert.deepEqual(readdirSync(mem).filter((n) => !n.startsWith('.')).sort(), ['CURRENT', v1, v2].sort(), 'no version removed, none added');
  assert.equal(MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName).recordsOfNotes(['note-7002']).length, 2);
});

test('mixing modes is refused with one line: no-raw-text into a raw memory, a raw writer or another salt into a hashed one', () => {
  const learner = new MemoryLearner({ modelId: MODEL.id, modelSha256: MODEL.sha256, dims: MODEL.dims } as unknown as BiEncoder);
  const rawRoot = join(root, 'mix-raw');
  publishMemory(memoryOf(normalizeName, true), rawRoot);
  assert.throws(() => learner.openOrCreate(rawRoot, { rawText: false }), (e: Error & { code?: string }) => e.code === 'MEMORY_MODE_MISMATCH' && !e.message.includes('\n') && /keeps raw text \(manifest rawText true\); --no-raw-text cannot be mixed into it/.test(e.message));
  assert.equal(learner.openOrCreate(rawRoot).rawText, true);

  const hashedRoot = join(root, 'mix-hashed');
  publishMemory(memoryOf(normalizeName, false), hashedRoot);
  // Without the flag a later writer keeps the memory's mode.
  assert.equal(learner.openOrCreate(hashedRoot).rawText, false);
  assert.equal(learner.openOrCreate(hashedRoot, { rawText: false }).rawText, false);
  // A writer that made its copy before the root had one (an updater started on an empty root) is refused at save.
  assert.throws(() => memoryOf(normalizeName, true).save(hashedRoot), /keeps no raw text \(manifest rawText false\); a writer with raw text cannot be mixed into it/);
  assert.throws(() => memoryOf(normalizeName, false).save(hashedRoot), /hashes surfaces with another salt/);
  assert.throws(() => memoryOf(normalizeName, false).save(rawRoot), /--no-raw-text cannot be mixed into it/);
});

test('readers that need text degrade: remove --surface by hash, export without text (not re-addable), a hashed line refused by add --jsonl', async () => {
  const mem = join(root, 'readers');
  publishMemory(memoryOf(normalizeName, false), mem);
  assert.equal(await memoryRemove.run(['--memory', mem, '--surface', 'SUGAR sickness', '--concept', 'MESH:D003920']), 0);
  const store = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
  assert.equal(store.size, LABELS.length - 2);
  assert.equal(store.surfaceCounts('sugar sickness').size, 0);
  const out = join(root, 'export.jsonl');
  assert.equal(await memoryExport.run(['--memory', mem, '--out', out]), 0);
  const exported = readFileSync(out, 'utf8');
  assert.equal(exported.trim().split('\n').length, store.size);
  for (const secret of SECRETS) assert.ok(!exported.includes(secret), secret);
  assert.throws(() => labelledMentionsFromJsonl(out), /export\.jsonl:1: a record of a memory without raw text \(surfaceHash, no text\): it cannot be added again/);
});

test('the memory updater keeps the mode: gold learned as hashes, replayed gold skipped as duplicates (by note hash), erased notes never learned again', async () => {
  const { MemoryUpdater } = await import('../../../src/eval/memory-updater.ts');
  const fakeEncoder = {
    modelId: MODEL.id, modelSha256: MODEL.sha256, dims: MODEL.dims, manifest: { query: { mode: 'mention', contextChars: 0, markers: ['[', ']'] } },
    encode: async (texts: string[]) => texts.map((t) => encoder.vector(t)),
  } as unknown as BiEncoder;
  const mem = join(root, 'updater');
  const kafka = { consumer: () => ({ close: async () => {} }) } as never;
  const updater = (rawText?: boolean) => new MemoryUpdater({ kafka, codec: {} as never, notesTopic: 'n', goldTopic: 'g', groupId: 'x', root: mem, learner: new MemoryLearner(fakeEncoder), learnFraction: 1, log: () => {}, ...(rawText === undefined ? {} : { rawText }) });
  // onNote/onGold are what each consumed record calls (the Kafka plumbing is memory-online.test.ts's).
  type Feed = { onNote(n: { noteId: string; text: string; mentions: { id: string; start: number; end: number; text: string; label: string }[] }): void; onGold(g: { noteId: string; mentionId: string; ids: string[]; label: string; start: number; end: number }): void };
  const feed = (u: InstanceType<typeof MemoryUpdater>): void => {
    const f = u as unknown as Feed;
    for (const [noteId, ids] of [['note-9001', ['MESH:D003920']], ['note-9002', ['MESH:D011014']]] as const) {
      f.onNote({ noteId, text: 'Pt has zorbitis xq.', mentions: [{ id: 'm1', start: 7, end: 18, text: 'zorbitis xq', label: 'Disease' }] });
      f.onGold({ noteId, mentionId: 'm1', ids: [...ids], label: 'Disease', start: 7, end: 18 });
    }
  };
  const first = updater(false);
  feed(first);
  await first.flush();
  assert.equal(first.stats.learned, 2);
  assert.ok(!filesOf(mem).includes('zorbitis') && !filesOf(mem).includes('note-900'));
  const store = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
  assert.equal(store.rawText, false);
  assert.equal(store.surfaceCounts('Zorbitis XQ').size, 2);
  // A restart (no flag: the memory's mode is kept) replays the topics: nothing is learned twice.
  const second = updater();
  feed(second);
  await second.flush();
  assert.deepEqual([second.stats.learned, second.stats.duplicates], [0, 2]);
  assert.equal(await memoryErase.run(['--memory', mem, '--note-id', 'note-9001']), 0);
  const third = updater();
  feed(third);
  await third.flush();
  assert.deepEqual([third.stats.learned, third.stats.erasedSkipped, third.stats.duplicates], [0, 1, 1]);
});
