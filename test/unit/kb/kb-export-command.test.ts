import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadKb } from '../../../src/kb/load.ts';
import { fixture, tempDir } from './fixtures.ts';

function cuilink(args: string[]) {
  return spawnSync(process.execPath, ['bin/cuilink.js', ...args], { encoding: 'utf8' });
}

test('cuilink kb export writes canonical JSONL whose sha256 is the store checksum', async () => {
  const tmp = tempDir();
  try {
    const out = `${tmp.dir}/kb.jsonl`;
    const run = cuilink(['kb', 'export', '--kb', fixture('ctd-tiny.tsv'), '--kb', fixture('tiny.obo.gz'), '--out', out]);
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stderr, /kb export: 8 concepts, \d+ names from 2 file\(s\) in [\d.]+ s/);
    const store = await loadKb([fixture('ctd-tiny.tsv'), fixture('tiny.obo.gz')]);
    assert.equal(createHash('sha256').update(readFileSync(out)).digest('hex'), store.checksum());
  } finally {
    tmp.cleanup();
  }
});

test('cuilink kb export: UMLS filters to stdout; bad input exits 2 with a one-line reason', () => {
  const run = cuilink(['kb', 'export', '--kb', fixture('umls/MRCONSO.RRF'), '--umls-sab', 'MSH', '--umls-tui', 'T047']);
  assert.equal(run.status, 0, run.stderr);
  const ids = run.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id);
  assert.deepEqual(ids, ['UMLS:C0011849', 'UMLS:C0011860', 'UMLS:C0012634', 'UMLS:C0020538']);

  const missing = cuilink(['kb', 'export', '--kb', '/nonexistent/x.obo']);
  assert.equal(missing.status, 2);
  assert.equal(missing.stderr.trim(), 'cuilink kb export: cannot read /nonexistent/x.obo: no such file');
  const noKb = cuilink(['kb', 'export']);
  assert.equal(noKb.status, 2);
  assert.match(noKb.stderr, /missing required flag --kb/);
  const help = cuilink(['kb', 'export', '--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /--umls-sab/);
});

test('cuilink kb export --kb-supplement: the retired concept of an older release is exported, nothing else of it', () => {
  const run = cuilink(['kb', 'export', '--kb', fixture('ctd-tiny.tsv'), '--kb-supplement', fixture('biosyn-older-release.txt')]);
  assert.equal(run.status, 0, run.stderr);
  const ids = run.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id);
  assert.equal(ids.length, 6);
  assert.ok(ids.includes('OMIM:613825'));
  assert.ok(!ids.includes('MESH:C565165'));
  const missing = cuilink(['kb', 'export', '--kb', fixture('ctd-tiny.tsv'), '--kb-supplement', '/nonexistent/old.txt']);
  assert.equal(missing.status, 2);
  assert.equal(missing.stderr.trim(), 'cuilink kb export: cannot read /nonexistent/old.txt: no such file');
});

test('cuilink evaluator: --kb-supplement with --index is a flag error (the index already holds its KB)', () => {
  const run = cuilink(['evaluator', '--index', '/nonexistent/idx', '--kb-supplement', fixture('biosyn-older-release.txt')]);
  assert.equal(run.status, 2);
  assert.equal(run.stderr.trim(), 'cuilink evaluator: --kb-supplement goes with --kb: an index already holds its KB');
});

test('cuilink kb export --xref-names: names of another vocabulary ride along as xrefNames, none of its concepts', () => {
  const run = cuilink(['kb', 'export', '--kb', fixture('ctd-tiny.tsv'), '--xref-names', fixture('xref-names-other.obo')]);
  assert.equal(run.status, 0, run.stderr);
  const concepts = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: string; synonyms: string[]; xrefNames?: string[] });
  assert.equal(concepts.length, 5);
  const endocrine = concepts.find((c) => c.id === 'MESH:D044882')!;
  assert.deepEqual(endocrine.xrefNames, ['endocrine gland disease', 'endocrinopathy']);
  assert.ok(!endocrine.synonyms.includes('endocrinopathy'));
  assert.equal(concepts.find((c) => c.id === 'OMIM:613097')!.xrefNames, undefined);
  const bad = cuilink(['evaluator', '--index', '/nonexistent/idx', '--xref-names', fixture('xref-names-other.obo')]);
  assert.equal(bad.status, 2);
  assert.equal(bad.stderr.trim(), 'cuilink evaluator: --xref-names goes with --kb: an index already holds its KB');
});

test('cuilink kb export: a UMLS filter on a KB with no UMLS file is a flag error, not a filter silently skipped', () => {
  const run = cuilink(['kb', 'export', '--kb', fixture('tiny.obo'), '--umls-tui', 'T047']);
  assert.equal(run.status, 2);
  assert.equal(run.stderr.trim(), `cuilink kb export: --umls-tui applies to umls files only, and no KB file is one (${fixture('tiny.obo')}: obo)`);
});
