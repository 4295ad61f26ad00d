import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../../src/kb/errors.ts';
import { buildIndexFromKb } from '../../../src/link/build-index-from-kb.ts';
import { DEFAULT_MODEL_DIR } from '../../../src/link/default-index.ts';
import { openLinker } from '../../../src/link/open-linker.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { normalizeName } from '../../../src/text/normalize.ts';

test('index build --out EXISTING fails before loading the KB or the model', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-exists-'));
  try {
    // Neither the KB nor the model exists: had either been loaded first, the error would name it.
    await assert.rejects(
      buildIndexFromKb({ kbPaths: [join(dir, 'no-such-kb.obo')], modelDir: join(dir, 'no-such-model'), outDir: dir, progress: false }),
      (e: unknown) => e instanceof InputError && e.code === 'INDEX_EXISTS' && /already exists \(pass --force to replace it\)/.test(e.message),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('index build with a KB supplement: the retired concept is indexed and the manifest names the supplement', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-supplement-'));
  try {
    const lines: string[] = [];
    const fixtures = join('test', 'fixtures', 'kb');
    const manifest = await buildIndexFromKb({
      kbPaths: [join(fixtures, 'ctd-tiny.tsv')],
      kbOptions: { supplements: [join(fixtures, 'biosyn-older-release.txt')] },
      modelDir: DEFAULT_MODEL_DIR,
      provider: 'cpu',
      outDir: join(dir, 'idx'),
      progress: false,
      log: (line) => lines.push(line),
    });
    assert.equal(manifest.kb.concepts, 5 + 1);
    assert.deepEqual(manifest.kb.sources, ['ctd-tiny.tsv', 'biosyn-older-release.txt (supplement)']);
    assert.ok(lines.includes(`added 1 concepts whose ids the KB lacks from ${join(fixtures, 'biosyn-older-release.txt')} (biosyn, supplement)`), lines.join('\n'));
    const index = await LinkIndex.open(join(dir, 'idx'), normalizeName);
    assert.equal(index.concepts[index.exact.lookup('C9 DEFICIENCY')[0]!]!.id, 'OMIM:613825', 'its names are in the exact table');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('index build with xref names: the manifest names the source, the names are kept and never encoded, the linker finds them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-xref-names-'));
  try {
    const lines: string[] = [];
    const fixtures = join('test', 'fixtures', 'kb');
    const build = (out: string, xrefNameSources: string[]) =>
      buildIndexFromKb({ kbPaths: [join(fixtures, 'ctd-tiny.tsv')], kbOptions: { xrefNameSources }, modelDir: DEFAULT_MODEL_DIR, provider: 'cpu', outDir: join(dir, out), progress: false, log: (line) => lines.push(line) });
    const manifest = await build('idx', [join(fixtures, 'xref-names-other.obo')]);
    const plain = await build('plain', []);
    assert.deepEqual(manifest.kb.sources, ['ctd-tiny.tsv', 'xref-names-other.obo (xref names)']);
    assert.ok(lines.includes(`gave 3 concepts names from ${join(fixtures, 'xref-names-other.obo')} through its cross-references (obo, xref names)`), lines.join('\n'));
    assert.equal(manifest.counts.names, plain.counts.names, 'no name vector added');
    assert.notEqual(manifest.kb.checksum, plain.kb.checksum, 'the KB checksum sees them');
    const linker = await openLinker({ indexDir: join(dir, 'idx'), rerankerDir: false, provider: 'cpu', log: () => {} });
    const off = await openLinker({ indexDir: join(dir, 'idx'), rerankerDir: false, provider: 'cpu', log: () => {}, config: { query: { xrefNames: false } } });
    try {
      const note = { noteId: 'n1', text: 'An endocrinopathy.', mentions: [{ id: 'm1', start: 3, end: 17, text: 'endocrinopathy', label: 'Disease' }] };
      const [on] = await linker.linkNotes([note]);
      assert.equal(on!.mentions[0]!.conceptId, 'MESH:D044882');
      assert.deepEqual([on!.mentions[0]!.candidates[0]!.via, on!.mentions[0]!.candidates[0]!.exact, on!.mentions[0]!.via], ['xref', false, 'xref'], 'found by the xref table, and says so: not exact');
      const [without] = await off.linkNotes([note]);
      assert.equal(without!.mentions[0]!.candidates[0]!.via, 'dense', 'query.xrefNames false: dense only');
    } finally {
      await linker.close();
      await off.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('index build --force replaces an index in place: the new one is whole at the path, nothing of the old one is left beside it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-force-'));
  try {
    const build = (kb: string, force: boolean) => buildIndexFromKb({ kbPaths: [join('test', 'fixtures', 'kb', kb)], modelDir: DEFAULT_MODEL_DIR, provider: 'cpu', outDir: join(dir, 'idx'), progress: false, overwrite: force, log: () => {} });
    const first = await build('ctd-tiny.tsv', false);
    const second = await build('tiny.obo', true);
    assert.notEqual(second.kb.checksum, first.kb.checksum);
    const { readdirSync } = await import('node:fs');
    assert.deepEqual(readdirSync(dir), ['idx'], 'no staging or replaced directory left');
    const index = await LinkIndex.open(join(dir, 'idx'), normalizeName);
    assert.equal(index.manifest.indexVersion, second.indexVersion);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
