import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';

// DEVELOPERS.md: one folder per stage, and a folder imports only from folders before it.
const STAGES = ['kb', 'text', 'encode', 'retrieve', 'rerank', 'link', 'telemetry', 'stream', 'eval', 'cli'];
const SRC = resolve('src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

function stageOf(path: string): string | undefined {
  return relative(SRC, path).split(sep)[0];
}

test('every src folder imports only from itself or earlier stages', () => {
  const violations: string[] = [];
  for (const file of files(SRC)) {
    const from = stageOf(file)!;
    assert.ok(STAGES.includes(from), `unexpected folder src/${from}`);
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/(?:from|import)\s*\(?\s*['"](\.[^'"]+)['"]/g)) {
      const target = stageOf(resolve(join(file, '..'), match[1]!));
      if (target && STAGES.indexOf(target) > STAGES.indexOf(from)) {
        violations.push(`${relative(SRC, file)} imports ${match[1]} (src/${target} comes after src/${from})`);
      }
    }
  }
  assert.deepEqual(violations, []);
});
