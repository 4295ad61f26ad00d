import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ENV_VARS } from '../../src/stream/stage-config.ts';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** This process's environment without the stage's CUILINK_* variables (a developer's shell may set them). */
export function envWithoutStageVariables(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name] of ENV_VARS) delete env[name];
  return env;
}

/** `node bin/cuilink.js ARGS` from the repository root, waited for (60 s hang guard). */
export function cli(args: string[]) {
  return spawnSync(process.execPath, ['bin/cuilink.js', ...args], { cwd: REPO, env: envWithoutStageVariables(), encoding: 'utf8', timeout: 60_000 });
}

/** Each command line exits 2 with one stderr line matching its pattern, and nothing on stdout. */
export function assertRefusedInOneLine(cases: readonly (readonly [string[], RegExp])[]): void {
  for (const [args, message] of cases) {
    const run = cli(args);
    assert.equal(run.status, 2, `${args.join(' ')}: ${run.stderr}`);
    const lines = run.stderr.trim().split('\n');
    assert.equal(lines.length, 1, `${args.join(' ')}: one line: ${run.stderr}`);
    assert.match(lines[0]!, message);
    assert.equal(run.stdout, '');
  }
}
