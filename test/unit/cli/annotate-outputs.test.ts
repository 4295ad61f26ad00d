import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { annotateExport } from '../../../src/cli/commands/annotate-export.ts';
import { annotateImport } from '../../../src/cli/commands/annotate-import.ts';

const REQUESTS = 'test/fixtures/label-studio/label-requests.jsonl';
const EXPORT = 'test/fixtures/label-studio/export.json';
const CORPUS = 'test/fixtures/eval/sample.PubTator';
const INDEX = 'test/fixtures/eval/index';
let dir: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'cuilink-annotate-outputs-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of a fixture in the temporary directory, so that a command that overwrote it would show. */
function copyOf(fixture: string, name: string): string {
  const path = join(dir, name);
  copyFileSync(fixture, path);
  return path;
}

const refusedAs = (pattern: RegExp) => (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && pattern.test(e.message);

test('annotate export: an output that is one of its inputs is refused and the input kept', async () => {
  const requests = copyOf(REQUESTS, 'requests.jsonl');
  const corpus = copyOf(CORPUS, 'corpus.PubTator');
  const notes = join(dir, 'notes.jsonl');
  writeFileSync(notes, '{"noteId":"1001","text":"x","mentions":[]}\n');
  const cases: [string[], RegExp][] = [
    [['--requests', requests, '--corpus', corpus, '--jsonl', requests], /^--jsonl .*requests\.jsonl is the --requests file/],
    [['--requests', requests, '--corpus', corpus, '--tasks', join(dir, 't.json'), '--config', corpus], /^--config .*corpus\.PubTator is the --corpus file/],
    [['--requests', requests, '--notes', notes, '--tasks', notes], /^--tasks .*notes\.jsonl is the --notes file/],
  ];
  for (const [args, message] of cases) {
    await assert.rejects(annotateExport.run(args), refusedAs(message), args.join(' '));
  }
  assert.equal(readFileSync(requests, 'utf8'), readFileSync(REQUESTS, 'utf8'));
  assert.equal(readFileSync(corpus, 'utf8'), readFileSync(CORPUS, 'utf8'));
  assert.ok(!existsSync(join(dir, 't.json')));
});

test('annotate export: an unwritable output fails before any output is written', async () => {
  const tasks = join(dir, 'tasks-new.json');
  await assert.rejects(annotateExport.run(['--requests', REQUESTS, '--corpus', CORPUS, '--tasks', tasks, '--jsonl', join(dir, 'missing', 'plain.jsonl')]), (e: Error & { code?: string }) => e.code === 'OUTPUT_ERROR' && /^--jsonl: cannot write .*plain\.jsonl: ENOENT/.test(e.message));
  assert.ok(!existsSync(tasks), 'no tasks file left behind');
  const previous = join(dir, 'tasks-previous.json');
  writeFileSync(previous, '[]\n');
  await assert.rejects(annotateExport.run(['--requests', REQUESTS, '--corpus', CORPUS, '--tasks', previous, '--config', dir]), /--config: cannot write .*: a directory, not a file/);
  assert.equal(readFileSync(previous, 'utf8'), '[]\n');
});

test('annotate import: --out or --nil-out naming the export, the answers or a tasks file is refused and the file kept', async () => {
  const exported = copyOf(EXPORT, 'export.json');
  const tasks = join(dir, 'import-tasks.json');
  writeFileSync(tasks, '[]\n');
  const answers = join(dir, 'answers.jsonl');
  writeFileSync(answers, '');
  const cases: [string[], RegExp][] = [
    [['--export', exported, '--tasks', tasks, '--out', exported], /^--out .*export\.json is the --export file/],
    [['--export', exported, '--tasks', tasks, '--out', join(dir, 'gold.jsonl'), '--nil-out', tasks], /^--nil-out .*import-tasks\.json is the --tasks file/],
    [['--jsonl', answers, '--tasks', tasks, '--out', answers], /^--out .*answers\.jsonl is the --jsonl file/],
    [['--export', exported, '--tasks', tasks, '--out', join(dir, 'g.jsonl'), '--nil-out', join(dir, 'g.jsonl')], /^--out and --nil-out must be different files$/],
  ];
  for (const [args, message] of cases) {
    await assert.rejects(annotateImport.run([...args, '--index', INDEX]), refusedAs(message), args.join(' '));
  }
  assert.equal(readFileSync(exported, 'utf8'), readFileSync(EXPORT, 'utf8'));
  assert.equal(readFileSync(tasks, 'utf8'), '[]\n');
  assert.ok(!existsSync(join(dir, 'gold.jsonl')));
});

test("annotate import: --out - or --nil-out - is refused before the KB loads, not written to a file named '-' (gold lines hold mention text)", async () => {
  for (const flag of ['out', 'nil-out']) {
    const args = ['--export', EXPORT, '--tasks', REQUESTS, '--index', INDEX, ...(flag === 'out' ? [] : ['--out', join(dir, 'gold-nil.jsonl')]), `--${flag}`, '-'];
    await assert.rejects(annotateImport.run(args), refusedAs(new RegExp(`^--${flag} -: this output is written to a file`)), flag);
  }
  assert.ok(!existsSync('-'));
});
