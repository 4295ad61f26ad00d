import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, ['bin/cuilink.js', 'calibrate', ...args], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
const INDEX = 'test/fixtures/eval/index';

test('calibrate: bad input is one line naming the flag or the split, exit 2, nothing loaded', () => {
  const cases: [string[], RegExp][] = [
    [['--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json'], /--index/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator'], /--out/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--calibration', 'c.json'], /--calibration: calibrate fits one/],
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json', '--nil-prevalence', '0.9'], /--nil-prevalence/],
    // A corpus too small for the tuning split: the split is empty, so there is nothing to fit on.
    [['--index', INDEX, '--corpus', 'test/fixtures/eval/sample.PubTator', '--out', 'x.json'], /tuning split of 100 documents needs more than \d+ documents/],
  ];
  for (const [args, message] of cases) {
    const result = run(...args);
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
    const lines = result.stderr.trim().split('\n').filter((l) => !l.startsWith('npm warn'));
    assert.equal(lines.length, 1, `one line: ${result.stderr}`);
    assert.match(lines[0]!, message);
  }
});
