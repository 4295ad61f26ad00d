// npm run figures: re-renders the figure regions of README.md and models/default/MODEL_CARD.md
// from the committed result files (scripts/figures/figures.ts says which). --check: exit 1 when
// a document differs, writing nothing.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REGIONS, readJsonFrom, renderDocument } from './figures.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const check = process.argv.includes('--check');
let stale = 0;
for (const file of new Set(REGIONS.map((r) => r.file))) {
  const path = join(root, file);
  const before = readFileSync(path, 'utf8');
  const after = renderDocument(before, file, readJsonFrom(root));
  if (before === after) continue;
  stale++;
  if (check) console.error(`figures: ${file} differs from its result files (run npm run figures)`);
  else writeFileSync(path, after);
}
if (!check) console.log(`figures: ${stale} document(s) rewritten`);
process.exitCode = check && stale > 0 ? 1 : 0;
