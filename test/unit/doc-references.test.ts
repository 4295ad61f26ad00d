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

// The README and docs show commands an integrator copies: a flag they give a command that its
// --help does not list (renamed, dropped, misspelt) is refused with exit 2 at the first try.
const DOCUMENTS = ['README.md', 'deploy/README.md', 'models/README.md', ...readdirSync('docs').filter((name) => name.endsWith('.md')).map((name) => join('docs', name))];

/** Every `cuilink <command> … --flag` in the code blocks and code spans of `text`, as [command, flag, line]. */
function documentedFlags(text: string, commandNames: readonly string[]): Array<[string, string, string]> {
  const names = [...commandNames].sort((a, b) => b.length - a.length);
  const blockLines = [...text.matchAll(/```[^\n]*\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.replace(/\\\n/g, ' ').split('\n'));
  const spans = [...text.replace(/```[\s\S]*?```/g, '').matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
  const found: Array<[string, string, string]> = [];
  for (const line of [...blockLines, ...spans]) {
    for (const m of line.matchAll(/cuilink(?:\.js)?\s+(?=[a-z])/g)) {
      const rest = line.slice(m.index! + m[0].length);
      const name = names.find((n) => rest === n || rest.startsWith(`${n} `));
      if (name === undefined) continue;
      // A command's flags end where the shell line or the next command starts.
      const tail = rest.slice(name.length).split(/cuilink(?:\.js)?\s|[;#|&]|\$ /)[0]!;
      for (const flag of tail.matchAll(/(?<![\w-])--([a-z][a-z0-9-]*)/g)) found.push([name, flag[1]!, line.trim()]);
    }
  }
  return found;
}

test('every flag README.md and docs/*.md give a cuilink command is in its --help', async () => {
  const { commands } = await import('../../src/cli/commands/index.ts');
  const usage = new Map(commands.map((c) => [c.name, c.usage]));
  const missing: string[] = [];
  let checked = 0;
  for (const file of DOCUMENTS) {
    for (const [name, flag, line] of documentedFlags(readFileSync(file, 'utf8'), [...usage.keys()])) {
      checked++;
      if (!new RegExp(`--${flag}(?![\\w-])`).test(usage.get(name)!)) missing.push(`${file}: cuilink ${name} --${flag} (${line.slice(0, 120)})`);
    }
  }
  assert.deepEqual(missing, []);
  assert.ok(checked >= 150, `only ${checked} documented flags found`);
});

test('documentedFlags finds a command line\'s flags in blocks and spans, and stops at the next command', () => {
  const text = '```\nnode bin/cuilink.js topics create --partitions 3 \\\n  --dry-run; cuilink run --config s.json\n```\nthen `cuilink dlq inspect --code X` and cuilink links --nothing';
  assert.deepEqual(
    documentedFlags(text, ['topics create', 'run', 'dlq inspect']).map(([name, flag]) => `${name} --${flag}`),
    ['topics create --partitions', 'topics create --dry-run', 'run --config', 'dlq inspect --code'],
  );
});

// README's "Command line" lists the link-config keys an integrator may set (`--link-config FILE`,
// `link` in the stage config): a key the code accepts and the list leaves out is a setting no one
// finds. The `memory` block is listed in docs/memory.md.
test('README\'s --link-config list names every link-config key (memory\'s in docs/memory.md)', async () => {
  const { linkConfigKeysMissing } = await import('../support/link-config-keys.ts');
  const readme = readFileSync('README.md', 'utf8');
  const start = readme.indexOf('`--link-config FILE`');
  const end = readme.indexOf('every nested object is strict', start);
  assert.ok(start >= 0 && end > start, 'README.md has the --link-config paragraph');
  assert.deepEqual(linkConfigKeysMissing(readme.slice(start, end), { memory: readFileSync('docs/memory.md', 'utf8') }), []);
});
