// `cuilink memory updater` learns only the notes of its learn stream: how much of the gold that is
// must be the operator's choice (a default of 0.5 left half the gold unlearned without a word).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));

function updater(args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.CUILINK_BROKERS;
  return spawnSync(process.execPath, ['bin/cuilink.js', 'memory', 'updater', ...args], { cwd: REPO, env, encoding: 'utf8', timeout: 60_000 });
}

test('without --learn-fraction: exit 2 and one line naming the flag, nothing started', () => {
  const run = updater(['--memory', 'memory-root', '--brokers', '127.0.0.1:1']);
  assert.equal(run.status, 2, run.stderr);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0]!, /missing required flag --learn-fraction/);
  assert.doesNotMatch(run.stderr, /learn\/measure split/, 'no start line: nothing started');
});

test('the split is logged at start with its fraction and seed, before anything is opened', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-updater-flags-'));
  try {
    // A model directory that does not exist: the command stops right after its start line.
    const run = updater(['--memory', join(dir, 'memory'), '--learn-fraction', '0.3', '--split-seed', '7', '--brokers', '127.0.0.1:1', '--model', join(dir, 'no-model')]);
    assert.notEqual(run.status, 0);
    const first = run.stderr.split('\n')[0]!;
    assert.match(first, /^memory-updater: learn\/measure split: learning the gold of 30% of notes \(--learn-fraction 0\.3, --split-seed 7\), measuring the other 70%/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the usage names --learn-fraction as required', () => {
  const help = updater(['--help']);
  assert.match(help.stdout + help.stderr, /Usage: cuilink memory updater --memory ROOT --learn-fraction F/);
  assert.match(help.stdout + help.stderr, /--learn-fraction F +required:/);
});

test('equal --notes-topic and --gold-topic: exit 2 and one line naming both, nothing started', () => {
  // One topic for both would decode every note as gold: no gold would ever find its note.
  const run = updater(['--memory', 'memory-root', '--learn-fraction', '0.5', '--notes-topic', 'cuilink.same', '--gold-topic', 'cuilink.same', '--brokers', '127.0.0.1:1']);
  assert.equal(run.status, 2, run.stderr);
  assert.equal(run.stderr.trim(), "cuilink memory updater: --notes-topic and --gold-topic must differ");
});
