import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluator } from '../../../src/cli/commands/evaluator.ts';
import { KB_FLAG_OPTIONS } from '../../../src/cli/kb-flags.ts';

test('evaluator --help names every KB-loading flag it accepts with --kb', () => {
  for (const flag of Object.keys(KB_FLAG_OPTIONS)) {
    assert.match(evaluator.usage, new RegExp(`^  --${flag}\\b`, 'm'), `--${flag} is accepted but not in the help`);
  }
});

test('evaluator --help names the alert flags, --calibration-alpha with its range and that it is off by default', () => {
  for (const flag of ['floor', 'baseline', 'margin', 'calibration-alpha', 'min-samples']) assert.match(evaluator.usage, new RegExp(`^  --${flag}\\b`, 'm'), flag);
  assert.match(evaluator.usage, /--calibration-alpha A[^]*0 < A < 1[^]*\(default off\)/);
});
