import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSeeds } from '../../../src/cli/commands/eval.ts';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const cli = (...args: string[]) => spawnSync(process.execPath, ['bin/cuilink.js', ...args], { cwd: REPO, encoding: 'utf8', timeout: 180_000 });
const CORPUS = 'test/fixtures/eval/sample.PubTator';

test('parseSeeds: one seed, a range or a list; anything else is an error naming the flag', () => {
  assert.deepEqual(parseSeeds(undefined, 'hold-out-seed', 20261126), [20261126]);
  assert.deepEqual(parseSeeds('7', 'hold-out-seed', 1), [7]);
  assert.deepEqual(parseSeeds('3-6', 'hold-out-seed', 1), [3, 4, 5, 6]);
  assert.deepEqual(parseSeeds('9, 2,5', 'hold-out-seed', 1), [9, 2, 5]);
  for (const bad of ['', 'a', '6-3', '1-33', '1,1', '1,,2', '1.5', '2-x']) {
    assert.throws(() => parseSeeds(bad, 'hold-out-seed', 1), /--hold-out-seed: an integer, A-B or N,M/, bad);
  }
});

test('eval --hold-out-seed: bad seeds, or seeds without --hold-out, are one line and exit 2 before anything loads', () => {
  for (const [args, message] of [
    [['--hold-out', '0.1', '--hold-out-seed', '1-99'], /--hold-out-seed: an integer, A-B/],
    [['--hold-out-seed', '3'], /--hold-out-seed: only with --hold-out F/],
  ] as const) {
    const result = cli('eval', '--index', 'no-such-index', '--corpus', 'no-such-corpus', ...args);
    assert.equal(result.status, 2, result.stderr);
    const lines = result.stderr.trim().split('\n').filter((l) => !l.startsWith('npm warn'));
    assert.equal(lines.length, 1, result.stderr);
    assert.match(lines[0]!, message);
  }
});

test('eval --hold-out: the report names the draw it made; several draws are pooled, each draw read as it would be alone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-eval-holdout-'));
  try {
    const index = join(dir, 'index');
    const built = cli('index', 'build', '--kb', 'test/fixtures/eval/mini-kb.jsonl', '--out', index, '--provider', 'cpu', '--threads', '1');
    assert.equal(built.status, 0, built.stderr);
    const evaluate = (seeds: string, out: string) => {
      const result = cli('eval', '--index', index, '--corpus', CORPUS, '--hold-out', '0.3', '--hold-out-seed', seeds, '--out', join(dir, out), '--provider', 'cpu', '--threads', '1');
      assert.equal(result.status, 0, result.stderr);
      return { stdout: result.stdout, report: JSON.parse(readFileSync(join(dir, out), 'utf8')).holdOut };
    };
    const five = evaluate('5', 'five.json');
    const six = evaluate('6', 'six.json');
    // The seed given, not the default one (the report used to say 20261126 whatever was drawn).
    assert.match(five.stdout, /held-out concepts \(seed 5\):/);
    assert.equal(five.report.seed, 5);
    assert.equal(five.report.pooled, undefined);
    const both = evaluate('5,6', 'both.json');
    assert.match(both.stdout, /held-out concepts \(seeds 5, 6, pooled\):/);
    assert.match(both.stdout, /^ {2}seed 5: .*NIL-F1/m);
    assert.match(both.stdout, /^ {2}seed 6: .*NIL-F1/m);
    assert.deepEqual(both.report.pooled.seeds, [5, 6]);
    assert.deepEqual(both.report.pooled.perSeed.map((d: { row: unknown }) => d.row), [five.report.atConfigured, six.report.atConfigured]);
    assert.equal(both.report.heldOutMentions, five.report.heldOutMentions + six.report.heldOutMentions);
    assert.equal(both.report.otherMentions, five.report.otherMentions + six.report.otherMentions);
    assert.equal(both.report.atConfigured.othersLost, five.report.atConfigured.othersLost + six.report.atConfigured.othersLost);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('eval --hold-out --memory: the memory has no labels of the held-out concepts (as one that never learned them); its other labels link as without --hold-out', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-eval-holdout-memory-'));
  const threads = ['--provider', 'cpu', '--threads', '1'];
  try {
    const index = join(dir, 'index');
    const built = cli('index', 'build', '--kb', 'test/fixtures/eval/mini-kb.jsonl', '--out', index, ...threads);
    assert.equal(built.status, 0, built.stderr);
    // Seed 5 at 0.3 holds out Colonic Neoplasms (D003110), the gold of both "colon cancer" mentions.
    const kept = [
      { text: 'colon cancer', label: 'SpecificDisease', ids: ['MESH:D009369'] },
      // An id outside the KB (memory.outsideKb): the gold of the "OMIM disease" mention.
      { text: 'OMIM disease', label: 'Modifier', ids: ['OMIM:601665'] },
    ];
    const heldOutLabel = { text: 'colon cancer', label: 'SpecificDisease', ids: ['MESH:D003110'] };
    const memory = (name: string, labels: object[]) => {
      writeFileSync(join(dir, `${name}.jsonl`), labels.map((l) => `${JSON.stringify(l)}\n`).join(''));
      const added = cli('memory', 'add', '--memory', join(dir, name), '--jsonl', join(dir, `${name}.jsonl`), '--index', index, '--outside-kb', ...threads);
      assert.equal(added.status, 0, added.stderr);
      return join(dir, name);
    };
    const evaluate = (memoryRoot: string, ...holdOut: string[]) => {
      const predictions = join(dir, 'predictions.jsonl');
      const result = cli('eval', '--index', index, '--corpus', CORPUS, '--memory', memoryRoot, ...holdOut, '--predictions', predictions, ...threads);
      assert.equal(result.status, 0, result.stderr);
      return readFileSync(predictions, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { mentionId: string; predicted: string[]; via: string });
    };
    const holdOut = ['--hold-out', '0.3', '--hold-out-seed', '5'];
    const withHeldOutLabels = evaluate(memory('full', [heldOutLabel, heldOutLabel, ...kept]), ...holdOut);
    const neverLearned = evaluate(memory('kept', kept), ...holdOut);
    // Kept, the two held-out labels out-voted the other label of "colon cancer": the memory knew the concept the KB had lost.
    assert.deepEqual(withHeldOutLabels, neverLearned);
    const colon = withHeldOutLabels.filter((p) => p.mentionId === '0-12' || p.mentionId === '46-58');
    assert.deepEqual(colon.map((p) => [p.via, p.predicted[0]]), [['memory', 'MESH:D009369'], ['memory', 'MESH:D009369']]);
    assert.ok(!withHeldOutLabels.some((p) => p.predicted.includes('MESH:D003110')), 'nothing links to a held-out concept');
    // Holding concepts out is no type filter: an id outside the KB still links (it was turned off for the whole run).
    const omim = withHeldOutLabels.find((p) => p.mentionId === '60-72')!;
    assert.deepEqual([omim.via, omim.predicted[0]], ['memory', 'OMIM:601665']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('eval --split and calibrate on a corpus too small to split: one line naming the corpus file, exit 2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-small-split-'));
  try {
    for (const args of [['eval', '--split', 'tune'], ['calibrate', '--out', join(dir, 'calibration.json')]]) {
      const result = cli(...args, '--index', 'no-such-index', '--corpus', CORPUS);
      assert.equal(result.status, 2, result.stderr);
      assert.equal(result.stderr, `cuilink ${args[0]}: ${CORPUS}: tuning split of 100 documents needs more than 3 documents\n`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('eval and calibrate refuse a corpus with a gold label of more than 64 ids, as gold-sample and the gold topic readers do: one line naming file, line, document and mention, exit 2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-many-ids-'));
  try {
    const corpus = join(dir, 'many.PubTator');
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `D${String(100_000 + i)}`).join('|');
    writeFileSync(corpus, ['1|t|Anemia.', '1|a|', `1\t0\t6\tAnemia\tDisease\t${ids(64)}`, '', '2|t|Many things.', '2|a|', `2\t0\t4\tMany\tDisease\t${ids(65)}`, ''].join('\n'));
    // The corpus is read before the index, so a missing index shows the corpus was refused first.
    for (const args of [['eval'], ['eval', '--split', 'tune'], ['calibrate', '--out', join(dir, 'calibration.json')]]) {
      const result = cli(...args, '--index', 'no-such-index', '--corpus', corpus);
      assert.equal(result.status, 2, result.stderr);
      assert.equal(result.stderr, `cuilink ${args[0]}: ${corpus}:7: document 2, mention 0-4: a gold label naming 65 concept ids; at most 64 are read (the gold topic's readers refuse more), so the corpus is refused\n`, args.join(' '));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
