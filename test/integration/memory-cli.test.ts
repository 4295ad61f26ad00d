import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryAdd, memoryExport, memoryInfo, memoryRemove } from '../../src/cli/commands/memory.ts';
import { memoryErase } from '../../src/cli/commands/memory-erase.ts';
import { buildIndexFromKb } from '../../src/link/build-index-from-kb.ts';
import { DEFAULT_MODEL_DIR } from '../../src/link/default-index.ts';
import { publishMemory } from '../../src/link/memory-learner.ts';
import { resolveMemoryDir } from '../../src/retrieve/memory-root.ts';
import { MemoryStore } from '../../src/retrieve/memory-store.ts';
import { normalizeName } from '../../src/text/normalize.ts';

// The real default bi-encoder; gold JSONL and a PubTator fixture in, export and remove out.
test('memory add (gold JSONL, PubTator), info, export, remove: each change a new version, CURRENT flipped', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-memory-cli-'));
  try {
    const mem = join(root, 'mem');
    const jsonl = join(root, 'gold.jsonl');
    writeFileSync(jsonl, [
      JSON.stringify({ text: 'sugar sickness', label: 'Disease', conceptId: 'MESH:D003920' }),
      JSON.stringify({ text: 'breast and ovarian cancer', label: 'Disease', conceptId: 'D001943|D010051' }),
    ].join('\n'));
    const encoder = ['--provider', 'cpu', '--threads', '1'];
    assert.equal(await memoryAdd.run(['--memory', mem, '--jsonl', jsonl, ...encoder]), 0);
    const v1 = resolveMemoryDir(mem).version;
    assert.equal(await memoryAdd.run(['--memory', mem, '--corpus', 'test/fixtures/eval/sample.PubTator', ...encoder]), 0);
    const v2 = resolveMemoryDir(mem);
    assert.notEqual(v2.version, v1);
    const store = MemoryStore.open(v2.dir, normalizeName);
    assert.equal(store.manifest!.parent, v1);
    // The composite label counts for both ids (the fixture corpus labels the same surface the same way).
    const composite = store.surfaceCounts('Breast and ovarian cancer');
    assert.deepEqual([...composite.keys()].sort(), ['MESH:D001943', 'MESH:D010051']);
    assert.ok(composite.get('MESH:D001943')! >= 1 && composite.get('MESH:D001943') === composite.get('MESH:D010051'));
    assert.ok(store.size > 2);
    assert.equal(await memoryInfo.run(['--memory', mem, '--json']), 0);
    const out = join(root, 'export.jsonl');
    assert.equal(await memoryExport.run(['--memory', mem, '--out', out]), 0);
    const exported = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; text: string });
    assert.equal(exported.length, store.size);
    assert.equal(await memoryRemove.run(['--memory', mem, '--surface', 'SUGAR sickness']), 0);
    const v3 = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
    assert.equal(v3.size, store.size - 1);
    assert.equal(v3.surfaceCounts('sugar sickness').size, 0);
    assert.equal(await memoryRemove.run(['--memory', mem, '--seq', '99999']), 1, 'nothing matched: memory unchanged');
    // export → add round-trips (the export format is gold JSONL).
    const mem2 = join(root, 'mem2');
    assert.equal(await memoryAdd.run(['--memory', mem2, '--jsonl', out, ...encoder]), 0);
    assert.equal(MemoryStore.open(resolveMemoryDir(mem2).dir, normalizeName).size, exported.length);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('memory erase: a note’s labels leave the memory and every older version holding them; the files are the owner’s only; the erasure outlives later writers', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-memory-erase-'));
  try {
    const mem = join(root, 'mem');
    const encoder = ['--provider', 'cpu', '--threads', '1'];
    const jsonl = join(root, 'gold.jsonl');
    writeFileSync(jsonl, `${JSON.stringify({ text: 'sugar sickness', label: 'Disease', conceptId: 'MESH:D003920', noteId: '7001' })}\n`);
    assert.equal(await memoryAdd.run(['--memory', mem, '--jsonl', jsonl, ...encoder]), 0);
    const untouched = resolveMemoryDir(mem).version; // holds no label of note 1001: kept
    assert.equal(await memoryAdd.run(['--memory', mem, '--corpus', 'test/fixtures/eval/sample.PubTator', ...encoder]), 0);
    const before = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
    const labelsOf1001 = before.list().filter((r) => r.noteId === '1001').length;
    assert.ok(labelsOf1001 > 0);
    const beforeVersion = before.version!;
    assert.equal((statSync(join(resolveMemoryDir(mem).dir, 'records.jsonl')).mode & 0o777), 0o600, 'records (mention text) readable by the owner only');
    assert.equal((statSync(resolveMemoryDir(mem).dir).mode & 0o777), 0o700);

    // Staging directories of saves that died, their records included: an old one is deleted, a fresh one (a save under way) kept.
    const abandoned = join(mem, `.building-${beforeVersion}-99999`);
    const underWay = join(mem, '.building-000099-abcdef0123-99998');
    for (const dir of [abandoned, underWay]) {
      mkdirSync(dir);
      writeFileSync(join(dir, 'records.jsonl'), readFileSync(join(resolveMemoryDir(mem).dir, 'records.jsonl')));
    }
    utimesSync(abandoned, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
    assert.equal(await memoryErase.run(['--memory', mem, '--note-id', '1001']), 0);
    assert.ok(!existsSync(abandoned), 'an abandoned staging directory holding the labels is deleted');
    assert.ok(existsSync(underWay), 'a save under way is left to finish (it cannot be made current over the erasure)');
    rmSync(underWay, { recursive: true });
    const after = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
    assert.equal(after.size, before.size - labelsOf1001);
    assert.ok(after.list().every((r) => r.noteId !== '1001'));
    assert.ok(after.isErased('1001') && !after.isErased('1002'));
    assert.ok(!readFileSync(join(resolveMemoryDir(mem).dir, 'manifest.json'), 'utf8').includes('"1001"'), 'the erase list names no note in plain text');
    assert.ok(!existsSync(join(mem, beforeVersion)), 'the version that held the labels is gone (no rollback to them)');
    assert.ok(existsSync(join(mem, untouched)), 'a version without them stays');

    // A later writer (memory add, or an updater holding an older copy) keeps the erasure.
    assert.equal(await memoryAdd.run(['--memory', mem, '--jsonl', jsonl, ...encoder]), 0);
    assert.ok(MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName).isErased('1001'));
    // `before` is such a stale copy (an updater opened it before the erasure): it cannot publish its labels again.
    const afterAdd = resolveMemoryDir(mem).version;
    assert.throws(() => publishMemory(before, mem), (e: Error & { code?: string }) => e.code === 'MEMORY_CHANGED');
    assert.equal(resolveMemoryDir(mem).version, afterAdd);
    assert.ok(MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName).list().every((r) => r.noteId !== '1001'));
    await assert.rejects(memoryErase.run(['--memory', mem]), /give exactly one of --note-id or --note-ids/);
    // A version that cannot be read stops the erasure before anything changes, naming the file.
    const current = resolveMemoryDir(mem).version;
    writeFileSync(join(mem, untouched, 'records.jsonl'), `${readFileSync(join(mem, untouched, 'records.jsonl'), 'utf8')}not json\n`);
    await assert.rejects(memoryErase.run(['--memory', mem, '--note-id', '1002']), /records\.jsonl:2: not a memory record; nothing erased/);
    assert.equal(resolveMemoryDir(mem).version, current);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('memory add --no-raw-text (real encoder): no mention text or note id on disk, lookups hit, erase works, mixing refused', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-memory-noraw-'));
  try {
    const mem = join(root, 'mem');
    const encoder = ['--provider', 'cpu', '--threads', '1'];
    const jsonl = join(root, 'gold.jsonl');
    writeFileSync(jsonl, `${JSON.stringify({ text: 'sugar sickness', label: 'Disease', conceptId: 'MESH:D003920', noteId: 'note-7001', context: 'Pt with sugar sickness.' })}\n`);
    assert.equal(await memoryAdd.run(['--memory', mem, '--jsonl', jsonl, '--no-raw-text', ...encoder]), 0);
    // A later writer without the flag keeps the memory's mode.
    assert.equal(await memoryAdd.run(['--memory', mem, '--corpus', 'test/fixtures/eval/sample.PubTator', ...encoder]), 0);
    const store = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
    assert.equal(store.rawText, false);
    const records = readFileSync(join(resolveMemoryDir(mem).dir, 'records.jsonl'), 'utf8');
    for (const secret of ['sugar sickness', 'note-7001', 'Pt with', 'ovarian cancer', '"text"', '"noteId"']) assert.ok(!records.includes(secret), secret);
    assert.deepEqual([...store.surfaceCounts('Sugar  Sickness')], [['MESH:D003920', 1]]);
    assert.ok(store.surfaceCounts('Breast and ovarian cancer').size > 0);
    const labelsOf1001 = store.recordsOfNotes(['1001']).length;
    assert.ok(labelsOf1001 > 0);
    assert.equal(await memoryErase.run(['--memory', mem, '--note-id', '1001,note-7001']), 0);
    const after = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
    assert.equal(after.size, store.size - labelsOf1001 - 1);
    assert.equal(after.surfaceCounts('sugar sickness').size, 0);
    const raw = join(root, 'raw');
    assert.equal(await memoryAdd.run(['--memory', raw, '--jsonl', jsonl, ...encoder]), 0);
    await assert.rejects(memoryAdd.run(['--memory', raw, '--jsonl', jsonl, '--no-raw-text', ...encoder]), /^InputError: .*keeps raw text \(manifest rawText true\); --no-raw-text cannot be mixed into it[^\n]*$/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('memory add --index: a label whose concept id the KB lacks is refused naming the id; --outside-kb keeps it on purpose', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-memory-ids-'));
  try {
    const index = join(root, 'index');
    await buildIndexFromKb({ kbPaths: ['test/fixtures/eval/mini-kb.jsonl'], modelDir: DEFAULT_MODEL_DIR, outDir: index, overwrite: true, progress: false });
    const jsonl = join(root, 'gold.jsonl');
    writeFileSync(jsonl, [JSON.stringify({ text: 'bloodlessness', label: 'Disease', conceptId: 'MESH:D000740' }), JSON.stringify({ text: 'thing', label: 'Disease', conceptId: 'NOPE:1' })].join('\n'));
    const mem = join(root, 'mem');
    const args = ['--memory', mem, '--jsonl', jsonl, '--index', index, '--provider', 'cpu', '--threads', '1'];
    await assert.rejects(memoryAdd.run(args), /concept id NOPE:1 is not in the KB of --index .*: fix the labels, or keep them with --outside-kb/);
    assert.ok(!existsSync(join(mem, 'CURRENT')), 'nothing written');
    assert.equal(await memoryAdd.run([...args, '--outside-kb']), 0);
    assert.equal(MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName).size, 2);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
