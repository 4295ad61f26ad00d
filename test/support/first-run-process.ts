// A first run in its own process (as a second linker replica on a shared cache volume, or
// `cuilink link` beside `cuilink demo`, is): imports everything, prints `ready`, waits for a line
// on stdin, then runs `ensureDefaultIndex` (with `ontology` after CACHE_DIR: `ensureDefaultOntology`)
// into CACHE_DIR with its log lines on stderr. Prints the path it returned and exits 0, else prints
// the error's code and message and exits 1. Started by first-runs.ts.
import { once } from 'node:events';
import { ensureDefaultOntology } from '../../src/kb/default-ontology.ts';
import { ensureDefaultIndex } from '../../src/link/default-index.ts';

const [cacheDir, what] = process.argv.slice(2) as [string, string | undefined];
const log = (line: string) => process.stderr.write(`${line}\n`);
process.stdout.write('ready\n');
process.stdin.resume();
await once(process.stdin, 'data');
process.stdin.pause();
try {
  const path = what === 'ontology' ? ensureDefaultOntology(cacheDir, log) : await ensureDefaultIndex({ cacheDir, log });
  process.stdout.write(`${path}\n`);
  process.exit(0);
} catch (error) {
  process.stdout.write(`${(error as { code?: string }).code ?? String(error)}: ${(error as Error).message}\n`);
  process.exit(1);
}
