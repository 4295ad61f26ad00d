// The figures README.md and models/default/MODEL_CARD.md quote are generated from committed result
// files (scripts/figures/figures.ts; `npm run figures` rewrites them). A hand-edited figure, or a
// result file refreshed without re-running the script, fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REGIONS, readJsonFrom, regionsIn, renderDocument } from '../../scripts/figures/figures.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('every figure region is in its document, and its sources are committed files', () => {
  for (const region of REGIONS) {
    const text = readFileSync(join(ROOT, region.file), 'utf8');
    assert.ok(regionsIn(text).includes(region.name), `${region.file} has the region ${region.name}`);
    for (const source of region.sources) assert.ok(existsSync(join(ROOT, source)), `${region.name}: ${source} exists`);
  }
});

test('README.md and MODEL_CARD.md figures equal what their result files give (run npm run figures)', () => {
  for (const file of new Set(REGIONS.map((r) => r.file))) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    assert.equal(renderDocument(text, file, readJsonFrom(ROOT)), text, `${file}: figures differ from their result files`);
  }
});

test('a figure edited by hand is caught', () => {
  const file = 'README.md';
  const text = readFileSync(join(ROOT, file), 'utf8');
  const edited = text.replace(/(<!-- figures:readme-link-table -->[\s\S]*?\| )0\.\d{3}/, '$10.999');
  assert.notEqual(edited, text);
  assert.notEqual(renderDocument(edited, file, readJsonFrom(ROOT)), edited);
});
