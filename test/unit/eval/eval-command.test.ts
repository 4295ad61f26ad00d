import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeEvalCommand } from '../../../src/cli/commands/eval.ts';
import { DEFAULT_MODEL_DIR, defaultIndexDir } from '../../../src/link/default-index.ts';
import { readPredictions } from '../../../src/eval/prediction-file.ts';
import type { EvalReport } from '../../../src/eval/eval-report.ts';
import { fakeLinker, SAMPLE_TABLE } from './fake-linker.ts';

const INDEX = 'test/fixtures/eval/index';
const CORPUS = 'test/fixtures/eval/sample.PubTator';

async function quietly<T>(fn: () => Promise<T>): Promise<{ value: T; out: string }> {
  const lines: string[] = [];
  const original = console.log;
  console.log = (...args: unknown[]) => void lines.push(args.join(' '));
  try {
    return { value: await fn(), out: lines.join('\n') };
  } finally {
    console.log = original;
  }
}

test('`cuilink eval` prints the table, writes the JSON report and per-mention predictions', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-eval-'));
  try {
    let closed = false;
    const evalCommand = makeEvalCommand(async ({ indexDir }) => {
      assert.equal(indexDir, INDEX);
      const core = fakeLinker(SAMPLE_TABLE);
      return { ...core, close: async () => void (closed = true) };
    });
    const out = join(dir, 'report.json');
    const predictions = join(dir, 'predictions.jsonl');
    const { value: code, out: printed } = await quietly(() => evalCommand.run(['--index', INDEX, '--corpus', CORPUS, '--out', out, '--predictions', predictions, '--batch', '1']));
    assert.equal(code, 0);
    assert.ok(closed);
    assert.match(printed, /3 notes, 8 mentions \(1 duplicate annotations, 1 duplicate documents, 1 without a concept skipped\)/);
    assert.match(printed, /overall +8 +0\.625 +0\.750 +0\.688/);
    assert.match(printed, /SpecificDisease +4 /);
    const report = JSON.parse(readFileSync(out, 'utf8')) as EvalReport;
    assert.equal(report.metrics.overall.acc1, 0.625);
    assert.equal(report.counts.mentions, 8);
    assert.deepEqual(Object.keys(report.metrics.bySemanticType), ['T047', 'T191']);
    const scored = await readPredictions(predictions);
    assert.equal(scored.length, 8);
    assert.deepEqual(scored[1]!.predicted, ['MESH:D010051', 'MESH:D001943']);
    // Error analysis without a join: the mention text, the gold ids with their names, the predicted names.
    const rows = readFileSync(predictions, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { text: string; goldIds: string[]; goldNames: (string | null)[]; predicted: string[]; predictedNames: (string | null)[] });
    for (const row of rows) {
      assert.equal(typeof row.text, 'string');
      assert.ok(row.text.length > 0);
      assert.equal(row.goldNames.length, row.goldIds.length);
      assert.equal(row.predictedNames.length, row.predicted.length);
    }
    assert.ok(rows.some((r) => r.goldNames.some((n) => typeof n === 'string' && n.length > 0)), 'gold names come from the index KB');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`cuilink eval --types` filters annotation types', async () => {
  const evalCommand = makeEvalCommand(async () => fakeLinker(SAMPLE_TABLE));
  const { out } = await quietly(() => evalCommand.run(['--index', INDEX, '--corpus', CORPUS, '--types', '^SpecificDisease$']));
  assert.match(out, /overall +4 /);
});

test('`cuilink eval --types` matching nothing lists the NER types the corpus has', async () => {
  const evalCommand = makeEvalCommand(async () => fakeLinker(SAMPLE_TABLE));
  await assert.rejects(evalCommand.run(['--index', INDEX, '--corpus', CORPUS, '--types', '^Chemical$']), /no annotated mentions of types \/\^Chemical\$\/ \(the corpus has: SpecificDisease 4, .*\)/);
});

test('`cuilink eval`: bad flags and files are one-line InputErrors, before any model loads', async () => {
  let opened = false;
  const evalCommand = makeEvalCommand(async () => {
    opened = true;
    return fakeLinker({});
  });
  await assert.rejects(evalCommand.run(['--corpus', CORPUS]), /missing required flag --index/);
  await assert.rejects(evalCommand.run(['--index', INDEX, '--corpus', CORPUS, '--batch', '0']), /--batch must be ≥ 1/);
  await assert.rejects(evalCommand.run(['--index', INDEX, '--corpus', CORPUS, '--types', '(']), /--types is not a valid regular expression/);
  await assert.rejects(evalCommand.run(['--index', INDEX, '--corpus', 'nope.PubTator']), /cannot read nope\.PubTator/);
  await assert.rejects(evalCommand.run(['--index', 'test/fixtures/eval', '--corpus', CORPUS]), /manifest\.json: no such file/);
  await assert.rejects(evalCommand.run(['--index', INDEX, '--corpus', CORPUS, '--bogus']), /Unknown option '--bogus'/);
  // A KB that holds none of the gold concepts would score 0.000 everywhere without a word.
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-eval-vocab-'));
  try {
    const foreign = join(dir, 'foreign.PubTator');
    writeFileSync(foreign, '7|t|Colon cancer.\n7\t0\t12\tColon cancer\tDisease\tICD10CM:C18.9\n\n');
    await assert.rejects(evalCommand.run(['--index', INDEX, '--corpus', foreign]), /--index test\/fixtures\/eval\/index: its KB holds none of the 1 gold mentions' concepts \(e\.g\. ICD10CM:C18\.9\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(opened, false);
});

test('`cuilink eval --errors` writes every miss with text, gold, prediction, gold rank and a class guess', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-eval-'));
  try {
    const evalCommand = makeEvalCommand(async () => fakeLinker(SAMPLE_TABLE));
    const errors = join(dir, 'errors.jsonl');
    const { out } = await quietly(() => evalCommand.run(['--index', INDEX, '--corpus', CORPUS, '--errors', errors]));
    const misses = readFileSync(errors, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { text: string; gold: { id: string }[]; predicted: { id: string } | null; goldRank: number | null; errorClass: string });
    // acc@1 0.625 on 8 mentions: 3 not at rank 1, one of them a gold NIL the linker rightly called NIL.
    assert.equal(misses.length, 2);
    assert.match(out, /misses: 2/);
    for (const m of misses) {
      assert.ok(m.text.length > 0);
      assert.ok(m.gold.length > 0);
      assert.ok(['nil', 'composite', 'abbreviation', 'hierarchy', 'synonym', 'other'].includes(m.errorClass));
      assert.ok(m.goldRank === null || m.goldRank > 1);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`cuilink eval --non-entities N` links the corpus again with unmarked spans and reports how many came out NIL; the other figures are the corpus as given', async () => {
  const evalCommand = makeEvalCommand(async () => fakeLinker(SAMPLE_TABLE));
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-eval-spans-'));
  try {
    // A note with unmarked text far from its one annotation: the fake linker knows none of it, so every span is NIL.
    const corpus = join(dir, 'spans.PubTator');
    writeFileSync(corpus, '9|t|Colon cancer.\n9|a|The cohort was followed for several years in three regional clinics across the northern provinces.\n9\t0\t12\tColon cancer\tDisease\tD003110\n\n');
    const out = join(dir, 'report.json');
    const { value: code, out: printed } = await quietly(() => evalCommand.run(['--index', INDEX, '--corpus', corpus, '--non-entities', '3', '--out', out]));
    assert.equal(code, 0);
    assert.match(printed, /overall +1 +1\.000/, 'the corpus as given: one mention, linked right');
    assert.match(printed, /^non-entity spans \(3 unmarked span\(s\) per note, seed 2; a proxy for NER false positives, easier than real ones\): 3, NIL 3 \(100\.0%\)$/m);
    const report = JSON.parse(readFileSync(out, 'utf8')) as { nonEntity: { spans: number; nil: number; seed: number } };
    assert.deepEqual([report.nonEntity.spans, report.nonEntity.nil, report.nonEntity.seed], [3, 3, 2]);
    await assert.rejects(evalCommand.run(['--index', INDEX, '--corpus', corpus, '--non-entity-seed', '4']), /--non-entity-seed: only with --non-entities N/);
    await assert.rejects(evalCommand.run(['--index', INDEX, '--corpus', corpus, '--non-entities', '0']), /--non-entities/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`cuilink eval` without --index still refuses, and says where the default index of `cuilink link` is and how to pass it', async () => {
  const evalCommand = makeEvalCommand(async () => fakeLinker({}));
  const cacheDir = mkdtempSync(join(tmpdir(), 'cuilink-eval-default-'));
  const saved = process.env.CUILINK_CACHE_DIR;
  process.env.CUILINK_CACHE_DIR = cacheDir;
  try {
    const dir = defaultIndexDir(cacheDir, DEFAULT_MODEL_DIR);
    const refusal = async () => {
      const error = await evalCommand.run(['--corpus', CORPUS]).then(() => assert.fail('eval ran without --index'), (e: Error & { code?: string }) => e);
      assert.equal(error.code, 'BAD_FLAGS');
      return error.message;
    };
    const unbuilt = await refusal();
    assert.ok(unbuilt.startsWith('missing required flag --index: '), unbuilt);
    assert.ok(unbuilt.includes(`--index ${dir}`), `names the default index and the flag to pass it: ${unbuilt}`);
    assert.match(unbuilt, /not built yet/);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'manifest.json'), '{}');
    const built = await refusal();
    assert.ok(built.includes(`--index ${dir}`) && !/not built yet/.test(built), built);
  } finally {
    if (saved === undefined) delete process.env.CUILINK_CACHE_DIR;
    else process.env.CUILINK_CACHE_DIR = saved;
    rmSync(cacheDir, { recursive: true, force: true });
  }
});
