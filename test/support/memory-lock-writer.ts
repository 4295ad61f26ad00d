// A second writer of a memory root, in its own process (as a memory updater pod beside an
// operator's command is): `activateMemoryVersion(ROOT, VERSION, EXPECTED)` that, once inside the
// root's lock (its first read of ROOT/CURRENT), creates SIGNAL_DIR/holding and waits for
// SIGNAL_DIR/go before it goes on. Exits 0 when it made VERSION current, else prints the error's
// code and exits 1. Used by test/unit/retrieve/memory-root-lock.test.ts.
import fs, { existsSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { activateMemoryVersion } from '../../src/retrieve/memory-root.ts';

const [root, version, expected, signalDir] = process.argv.slice(2) as [string, string, string, string];
const current = join(root, 'CURRENT');
const realReadFileSync = fs.readFileSync;
let paused = false;
fs.readFileSync = ((...args: Parameters<typeof fs.readFileSync>) => {
  const result = realReadFileSync(...args);
  if (!paused && args[0] === current) {
    paused = true;
    writeFileSync(join(signalDir, 'holding'), '');
    const deadline = Date.now() + 60_000;
    while (!existsSync(join(signalDir, 'go')) && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
  return result;
}) as typeof fs.readFileSync;
syncBuiltinESMExports();

try {
  activateMemoryVersion(root, version, expected);
  process.exit(0);
} catch (error) {
  console.log((error as { code?: string }).code ?? String(error));
  process.exit(1);
}
