// Runs unit then integration tests with node's test runner; Node 20's --test takes no globs, so
// the files are listed here.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function collect(dir) {
  let out = [];
  let entries = [];
  try { entries = readdirSync(dir); } catch { return out; }
  for (const name of entries.sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out = out.concat(collect(path));
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

const suites = process.argv.slice(2);
const dirs = suites.length > 0 ? suites : ['test/unit', 'test/integration'];
const files = dirs.flatMap(collect);
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=spec', ...files], { stdio: 'inherit' });
process.exit(result.status ?? 1);
