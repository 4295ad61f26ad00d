// ECE and the reliability bins read only links with a calibrated confidence and candidates, checked
// through `cuilink eval` on the real models over a fixture index: without a calibration there is
// no ECE (a ranking score is not a probability), and a link the type filter left without
// candidates stays out of the bins of a calibrated run.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeEvalCommand } from '../../../src/cli/commands/eval.ts';
import { buildIndexFromKb } from '../../../src/link/build-index-from-kb.ts';
import { DEFAULT_MODEL_DIR } from '../../../src/link/default-index.ts';
import { openLinker } from '../../../src/link/open-linker.ts';
import type { EvalReport } from '../../../src/eval/eval-report.ts';
import type { ConfidenceSummary } from '../../../src/eval/confidence/selective-metrics.ts';
import { formatCalibrationTest } from '../../../src/eval/confidence/confidence-format.ts';

let dir: string;
let indexDir: string;
let corpus: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cuilink-ece-'));
  indexDir = join(dir, 'idx');
  await buildIndexFromKb({ kbPaths: [join('test', 'fixtures', 'kb', 'ctd-tiny.tsv')], modelDir: DEFAULT_MODEL_DIR, provider: 'cpu', threads: 1, outDir: indexDir, progress: false, log: () => {} });
  // Title "Diabetes Mellitus and NIDDM." (0-28), then the abstract from 29.
  corpus = join(dir, 'corpus.PubTator');
  writeFileSync(corpus, [
    '9001|t|Diabetes Mellitus and NIDDM.',
    '9001|a|Type 2 Diabetes treated with aspirin.',
    '9001\t0\t17\tDiabetes Mellitus\tDisease\tD003920',
    '9001\t22\t27\tNIDDM\tDisease\tD003924',
    '9001\t29\t44\tType 2 Diabetes\tDisease\tD003924',
    '9001\t58\t65\taspirin\tChemical\tD003920',
    '',
  ].join('\n'));
});

after(() => rmSync(dir, { recursive: true, force: true }));

async function runEval(flags: string[]): Promise<{ printed: string; report: EvalReport & { confidence: ConfidenceSummary | null } }> {
  const out = join(dir, `report-${flags.length}.json`);
  const lines: string[] = [];
  const original = console.log;
  console.log = (...args: unknown[]) => void lines.push(args.join(' '));
  try {
    const command = makeEvalCommand((options) => openLinker({ ...options, provider: 'cpu', threads: 1, log: () => {} }));
    assert.equal(await command.run(['--index', indexDir, '--corpus', corpus, '--out', out, ...flags]), 0);
  } finally {
    console.log = original;
  }
  return { printed: lines.join('\n'), report: JSON.parse(readFileSync(out, 'utf8')) as EvalReport & { confidence: ConfidenceSummary | null } };
}

test('eval without a calibration: no ECE and empty reliability bins, in the table and the JSON report', async () => {
  const { printed, report } = await runEval(['--calibration', 'none']);
  const { overall, byLabel } = report.metrics;
  assert.equal(overall.n, 4);
  assert.notEqual(overall.acc1, null, 'the ranking is still judged');
  for (const [group, summary] of [['overall', overall], ...Object.entries(byLabel)] as const) {
    assert.equal(summary.ece, null, `${group}: ECE of raw scores`);
    assert.deepEqual(summary.reliability.map((b) => b.n), new Array(10).fill(0), `${group}: reliability bins`);
  }
  // The last column of every row of the table is the ECE.
  const rows = printed.split('\n').filter((l) => /^(overall|Disease|Chemical) /.test(l));
  assert.equal(rows.length, 3);
  for (const row of rows) assert.match(row, / —$/, row);
  assert.equal(report.confidence, null);
});

test('eval with the shipped calibration: a link without candidates (type filter) stays out of the bins and its group has no ECE', async () => {
  const config = join(dir, 'chemical-filtered.json');
  writeFileSync(config, JSON.stringify({ typeFilter: { Chemical: ['no such type'] } }));
  const { printed, report } = await runEval(['--link-config', config]);
  const { overall, byLabel } = report.metrics;
  assert.equal(overall.n, 4);
  assert.equal(byLabel.Chemical!.n, 1);
  assert.equal(byLabel.Chemical!.ece, null, 'the Chemical mention has no candidates, so no confidence');
  assert.deepEqual(byLabel.Chemical!.reliability.map((b) => b.n), new Array(10).fill(0));
  // The three Disease links are calibrated: they, and only they, fill the overall bins.
  assert.equal(overall.reliability.reduce((n, b) => n + b.n, 0), 3);
  assert.deepEqual(overall.reliability, byLabel.Disease!.reliability);
  assert.equal(overall.ece, byLabel.Disease!.ece);
  // The same links as the confidence line, so the same ECE (its bins are summed in floating point).
  assert.equal(report.confidence!.n, 3);
  assert.ok(Math.abs(overall.ece! - report.confidence!.ece!) < 1e-9, `${overall.ece} vs ${report.confidence!.ece}`);
  assert.match(printed.split('\n').find((l) => l.startsWith('Chemical '))!, / —$/);
  // The analytic calibration test, right under the bootstrap floor's line, over the same three links.
  const lines = printed.split('\n');
  const floor = lines.findIndex((l) => l.startsWith('confidence (all linked mentions, 3 links'));
  assert.ok(floor >= 0, printed);
  assert.equal(lines[floor + 1], formatCalibrationTest(overall));
  assert.match(lines[floor + 1]!, /^calibration test \(analytic, grouped; 3 links\): χ² \d+\.\d\d on 1 df, p \d/);
  assert.ok(overall.calibrationP! > 0 && overall.calibrationP! <= 1, `p ${overall.calibrationP}`);
});
