import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

// The code sends its reader to documents and schemas by path ("see docs/x.md", "schemas/y.avsc"):
// each path it names must be there, or the reader is sent nowhere.
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

test('every docs/*.md and schemas/*.avsc the source code names exists', () => {
  const missing: string[] = [];
  let checked = 0;
  for (const file of files('src')) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/(?<![\w/.-])((?:docs|schemas)\/[\w./-]*\w\.(?:md|avsc))/g)) {
      checked++;
      if (!existsSync(match[1]!)) missing.push(`${file}: ${match[1]}`);
    }
  }
  assert.deepEqual(missing, []);
  assert.ok(checked >= 50, `only ${checked} references found`);
});
