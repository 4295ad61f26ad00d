import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';

// docs/architecture.md, "The layering rule": one folder per stage, and a folder imports only from
// itself and folders before it. The stage order is read from that document's `stages` block.
const ARCHITECTURE = resolve('docs', 'architecture.md');
const STAGES = stagesOf(readFileSync(ARCHITECTURE, 'utf8'));
const SRC = resolve('src');

function stagesOf(markdown: string): string[] {
  const block = /```stages\n([^`]+)```/.exec(markdown);
  if (!block) throw new Error(`${ARCHITECTURE}: no \`\`\`stages block`);
  return block[1]!.split('→').map((s) => s.trim());
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

function stageOf(path: string): string | undefined {
  return relative(SRC, path).split(sep)[0];
}

test('docs/architecture.md states the stage order, and every src folder is one of its stages', () => {
  assert.deepEqual(STAGES, ['kb', 'text', 'encode', 'retrieve', 'rerank', 'link', 'telemetry', 'stream', 'eval', 'cli']);
  const folders = readdirSync(SRC).filter((name) => statSync(join(SRC, name)).isDirectory());
  assert.deepEqual(folders.filter((f) => !STAGES.includes(f)), [], 'folders the document does not place');
});

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
