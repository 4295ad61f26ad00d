import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { link } from '../../../src/cli/commands/link.ts';
import { buildIndexFromKb } from '../../../src/link/build-index-from-kb.ts';
import { capture } from '../../support/capture-console.ts';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const NOTES = [
  { noteId: 'n1', text: 'Patient has diabetes mellitus and DM.', mentions: [{ id: 'm1', start: 12, end: 29, text: 'diabetes mellitus', label: 'Disease' }] },
  { noteId: 'n2', text: 'No disease here.', mentions: [] },
].map((n) => `${JSON.stringify(n)}\n`).join('');
const FAST = ['--reranker', 'none', '--calibration', 'none', '--provider', 'cpu', '--threads', '1'];

let dir: string;
let index: string;
let notes: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cuilink-link-cmd-'));
  index = join(dir, 'index');
  notes = join(dir, 'notes.jsonl');
  writeFileSync(notes, NOTES);
  await buildIndexFromKb({ kbPaths: ['test/fixtures/kb/tiny.jsonl'], modelDir: 'models/default/biencoder', outDir: index, provider: 'cpu', threads: 1, progress: false });
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A fresh directory with a previous output in it. */
function withPrevious(name: string): { work: string; out: string } {
  const work = join(dir, name);
  mkdirSync(work);
  const out = join(work, 'out.jsonl');
  writeFileSync(out, 'previous run\n');
  return { work, out };
}

test('link --in F --out F: refused before anything is read or written, the input kept (also through a hard link)', async () => {
  const { work } = withPrevious('same');
  const input = join(work, 'in.jsonl');
  writeFileSync(input, NOTES);
  linkSync(input, join(work, 'alias.jsonl'));
  for (const out of [input, join(work, '.', 'in.jsonl'), join(work, 'alias.jsonl')]) {
    await assert.rejects(link.run(['--index', index, '--in', input, '--out', out, ...FAST]), (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && /^--out .* is the --in file/.test(e.message));
    assert.equal(readFileSync(input, 'utf8'), NOTES);
  }
  const cli = spawnSync(process.execPath, ['bin/cuilink.js', 'link', '--index', index, '--in', input, '--out', input, ...FAST], { cwd: REPO, encoding: 'utf8', timeout: 120_000 });
  assert.equal(cli.status, 2, cli.stderr);
  assert.deepEqual(cli.stderr.trim().split('\n'), [`cuilink link: --out ${input} is the --in file: writing it would destroy the input`]);
  assert.equal(readFileSync(input, 'utf8'), NOTES);
});

test('link that fails to start (a bad --index) leaves the previous --out as it was, and no temporary file', async () => {
  const { work, out } = withPrevious('bad-index');
  await assert.rejects(link.run(['--index', join(work, 'typo'), '--in', notes, '--out', out, ...FAST]), /no such file \(not an index directory\)/);
  assert.equal(readFileSync(out, 'utf8'), 'previous run\n');
  assert.deepEqual(readdirSync(work), ['out.jsonl']);
});

test('link --out into a missing directory fails at once, before the models load', async () => {
  await assert.rejects(link.run(['--index', join(dir, 'never-opened'), '--in', notes, '--out', join(dir, 'missing', 'out.jsonl'), ...FAST]), /--out .*out\.jsonl: ENOENT: no such file or directory$/);
});

test('link that succeeds replaces --out whole, leaving no temporary file', async () => {
  const { work, out } = withPrevious('ok');
  const run = await capture(() => link.run(['--index', index, '--in', notes, '--out', out, ...FAST]));
  assert.equal(run.code, 0);
  const linked = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { noteId: string; mentions: { conceptId: string | null }[] });
  assert.deepEqual(linked.map((n) => n.noteId), ['n1', 'n2']);
  assert.equal(linked[0]!.mentions[0]!.conceptId, 'MESH:D003920');
  assert.deepEqual(readdirSync(work), ['out.jsonl']);
});

test('link stopped by SIGINT or SIGTERM part way leaves the previous --out and no temporary file, and exits 130 / 143', async () => {
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    const { work, out } = withPrevious(`signal-${signal}`);
    // stdin stays open: the run is part way for as long as the test wants.
    const child = spawn(process.execPath, ['bin/cuilink.js', 'link', '--index', index, '--out', out, ...FAST], { cwd: REPO, stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(child, 'exit');
    child.stdin.write(NOTES);
    for (let waited = 0; !readdirSync(work).some((name) => name.endsWith('.partial')); waited += 20) {
      assert.ok(waited < 60_000, `no temporary file appeared: ${stderr}`);
      await sleep(20);
    }
    child.kill(signal);
    const [exitCode] = (await exited) as [number | null];
    assert.equal(exitCode, code, stderr);
    assert.equal(readFileSync(out, 'utf8'), 'previous run\n');
    assert.deepEqual(readdirSync(work), ['out.jsonl']);
  }
});

test('link --memory naming no memory is refused (a one-shot run would link without one and not say so)', async () => {
  const { work, out } = withPrevious('memory');
  await assert.rejects(link.run(['--index', index, '--in', notes, '--out', out, '--memory', join(work, 'no-such-memory'), ...FAST]), (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && /^--memory .*no-such-memory: no such memory root or version directory/.test(e.message));
  mkdirSync(join(work, 'empty-root'));
  await assert.rejects(link.run(['--index', index, '--in', notes, '--out', out, '--memory', join(work, 'empty-root'), ...FAST]), /--memory .*empty-root: neither a memory version directory nor a memory root/);
  assert.equal(readFileSync(out, 'utf8'), 'previous run\n');
});

test('link reads an --in file that starts with a UTF-8 byte-order mark as the other readers do: its first note is linked, not "not JSON"', async () => {
  // Editors on Windows write one; the KB, corpus and annotation readers drop it (src/kb/line-reader.ts).
  const { work, out } = withPrevious('bom');
  const input = join(work, 'in.jsonl');
  writeFileSync(input, `\uFEFF${NOTES}`);
  const run = await capture(() => link.run(['--index', index, '--in', input, '--out', out, ...FAST]));
  assert.equal(run.code, 0, run.err.join('\n'));
  assert.deepEqual(readFileSync(out, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { noteId: string }).noteId), ['n1', 'n2']);
});
