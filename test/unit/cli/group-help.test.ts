// The top-level help says "Run 'cuilink <command> --help' for a command's options": for a command
// group (memory, dlq, index, kb, topics, annotate) that lists its subcommands, exit 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { commands } from '../../../src/cli/commands/index.ts';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const cli = (args: string[]) => spawnSync(process.execPath, ['bin/cuilink.js', ...args], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });

test('cuilink <group> --help lists the group\'s subcommands and exits 0; the bare group still asks for one (exit 2)', () => {
  const groups = [...new Set(commands.filter((c) => c.name.includes(' ')).map((c) => c.name.split(' ')[0]!))];
  assert.ok(groups.includes('memory') && groups.includes('dlq'), groups.join(', '));
  for (const group of ['memory', 'dlq']) {
    for (const flag of ['--help', '-h']) {
      const run = cli([group, flag]);
      assert.equal(run.status, 0, `${group} ${flag}: ${run.stderr}`);
      for (const sub of commands.filter((c) => c.name.startsWith(`${group} `))) assert.ok(run.stdout.includes(sub.name), `${group} ${flag} lists ${sub.name}`);
    }
    const bare = cli([group]);
    assert.equal(bare.status, 2);
    assert.match(bare.stderr, new RegExp(`^cuilink: '${group}' needs a subcommand`));
  }
});
