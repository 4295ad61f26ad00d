import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { memoryAdd, memoryExport, memoryRemove } from '../../../src/cli/commands/memory.ts';
import { publishMemory } from '../../../src/link/memory-learner.ts';
import { currentMemoryVersion } from '../../../src/retrieve/memory-root.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import type { NewMemoryRecord } from '../../../src/retrieve/memory-record.ts';
import { normalizeName } from '../../../src/text/normalize.ts';
import { TrigramEncoder } from '../../support/trigram-encoder.ts';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const encoder = new TrigramEncoder();
const LABELS: NewMemoryRecord[] = [
  { text: 'sugar sickness', label: 'Disease', ids: ['MESH:D003920'], source: 'test', time: 1, noteId: 'n1', mentionId: 'm1' },
  { text: 'lung fire', label: 'Disease', ids: ['MESH:D011014'], source: 'other', time: 1, noteId: 'n2', mentionId: 'm1' },
];
let dir: string;
let memory: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cuilink-memory-cmd-'));
  memory = join(dir, 'mem');
  const store = MemoryStore.empty({ id: 'test-trigram-encoder', sha256: 'd'.repeat(64), dims: encoder.dims }, normalizeName);
  store.add(LABELS, LABELS.map((r) => encoder.vector(r.text)));
  publishMemory(store, memory);
});
after(() => rmSync(dir, { recursive: true, force: true }));

test('memory export --out into a missing directory: one line, exit 2, no stack trace', async () => {
  await assert.rejects(memoryExport.run(['--memory', memory, '--out', join(dir, 'missing', 'x.jsonl')]), (e: Error & { code?: string }) => e.code === 'OUTPUT_ERROR' && /^--out: cannot write .*missing\/x\.jsonl: ENOENT/.test(e.message));
  const cli = spawnSync(process.execPath, ['bin/cuilink.js', 'memory', 'export', '--memory', memory, '--out', '/nonexistent/x.jsonl'], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
  assert.equal(cli.status, 2, cli.stderr);
  assert.match(cli.stderr, /^cuilink memory export: --out: cannot write \/nonexistent\/x\.jsonl: ENOENT[^\n]*\n$/);
});

test('memory remove --concept without --surface is refused (it would be ignored), the memory unchanged', async () => {
  const version = currentMemoryVersion(memory);
  for (const args of [['--seq', '1'], ['--source', 'test']]) {
    await assert.rejects(memoryRemove.run(['--memory', memory, ...args, '--concept', 'MESH:D003920']), (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && e.message === '--concept: only with --surface TEXT', args.join(' '));
  }
  assert.equal(currentMemoryVersion(memory), version);
});

test('memory add --jsonl refuses --split, --split-seed and --types (they select from a corpus; a gold JSONL was added whole)', async () => {
  const gold = join(dir, 'gold.jsonl');
  writeFileSync(gold, '{"text": "sugar sickness", "label": "Disease", "ids": ["MESH:D003920"]}\n');
  const fresh = join(dir, 'fresh');
  for (const [flag, ...args] of [['split', 'tune'], ['split-seed', '7'], ['types', 'Disease']]) {
    await assert.rejects(memoryAdd.run(['--memory', fresh, '--jsonl', gold, `--${flag!}`, ...args]), (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && e.message === `--${flag}: only with --corpus (it selects from a PubTator corpus; a --jsonl file is added whole)`, flag);
  }
  assert.equal(existsSync(fresh), false, 'nothing added');
});

test('memory export --out - writes to stdout, as link and kb export read it, not to a file named "-" (the lines hold mention text)', () => {
  const cwd = mkdtempSync(join(dir, 'cwd-'));
  const cli = spawnSync(process.execPath, [join(REPO, 'bin/cuilink.js'), 'memory', 'export', '--memory', memory, '--out', '-'], { cwd, encoding: 'utf8', timeout: 60_000 });
  assert.equal(cli.status, 0, cli.stderr);
  assert.deepEqual(cli.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { text: string }).text), ['sugar sickness', 'lung fire']);
  assert.equal(existsSync(join(cwd, '-')), false);
});

test('memory add --split on a corpus too small to split is refused naming the corpus file, nothing added', async () => {
  const corpus = join(dir, 'small.PubTator');
  writeFileSync(corpus, ['1|t|Gout.', '1|a|', '1\t0\t4\tGout\tSpecificDisease\tD006073', ''].join('\n'));
  const fresh = join(dir, 'fresh-split');
  for (const part of ['tune', 'learn']) {
    await assert.rejects(memoryAdd.run(['--memory', fresh, '--corpus', corpus, '--split', part]), (e: Error & { code?: string }) => e.code === 'BAD_SPLIT' && e.message === `${corpus}: tuning split of 100 documents needs more than 1 documents`, part);
  }
  assert.equal(existsSync(fresh), false, 'nothing added');
});

test('memory add --corpus refuses a corpus with a gold label of more than 64 ids (the memory updater refuses such a label), naming file, line, document and mention; nothing added', async () => {
  const corpus = join(dir, 'many-ids.PubTator');
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `D${String(100_000 + i)}`).join('|');
  writeFileSync(corpus, ['1|t|Gout.', '1|a|', `1\t0\t4\tGout\tSpecificDisease\t${ids(65)}`, ''].join('\n'));
  const fresh = join(dir, 'fresh-many-ids');
  // No model to load: the corpus is refused before the encoder opens (before, its labels reached the model and were added).
  await assert.rejects(
    memoryAdd.run(['--memory', fresh, '--corpus', corpus, '--model', join(dir, 'no-such-model')]),
    (e: Error & { code?: string }) => e.code === 'PARSE_ERROR' && e.message === `${corpus}:3: document 1, mention 0-4: a gold label naming 65 concept ids; at most 64 are read (the gold topic's readers refuse more), so the corpus is refused`,
  );
  assert.equal(existsSync(fresh), false, 'nothing added');
});
