import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Concept } from '../../../src/kb/concept.ts';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { nameLookups } from '../../../src/link/linking-stages.ts';
import { LooseMatchTable } from '../../../src/retrieve/loose-match-table.ts';
import { XrefNameTable } from '../../../src/retrieve/xref-name-table.ts';
import { normalizeName } from '../../../src/text/normalize.ts';
import { looseKey } from '../../../src/text/loose-key.ts';
import { TrigramEncoder } from '../../support/trigram-encoder.ts';

const concept = (id: string, name: string, synonyms: string[], xrefNames?: string[]): Concept => ({ id, name, synonyms, semanticTypes: ['Disease'], parents: [], xrefs: [], altIds: [], ...(xrefNames ? { xrefNames } : {}) });

// MeSH's "Kidney Diseases" is DOID's "nephropathy"; DOID also calls it "DM"-like short forms and
// gives one concept a name another KB concept already has.
const CONCEPTS = [
  concept('MESH:D007674', 'Kidney Diseases', ['Renal Diseases'], ['nephropathy', 'KD', 'Renal failure, progressive']),
  concept('MESH:C537000', 'Renal Failure, Progressive', ['Nephropathy with hypertension']),
  concept('MESH:D009135', 'Muscular Diseases', ['Myopathies'], ['muscle disease']),
  concept('MESH:D009133', 'Muscular Atrophy', [], ['muscle wasting', 'myopathy']),
];

const isKbName = (name: string) => CONCEPTS.some((c) => [c.name, ...c.synonyms].some((n) => normalizeName(n) === normalizeName(name)));

test('XrefNameTable: strict then loose key; short forms and names the KB has are left out', () => {
  const table = new XrefNameTable(CONCEPTS, isKbName, normalizeName, looseKey);
  assert.equal(table.empty, false);
  assert.deepEqual(table.lookup('nephropathy'), [0]);
  assert.deepEqual(table.lookup('Nephropathies'), [0], 'the loose key: plural, case');
  assert.deepEqual(table.lookup('muscle wasting'), [3]);
  assert.deepEqual(table.lookup('KD'), [], 'a short form another vocabulary fixes for its own use');
  assert.deepEqual(table.lookup('Renal failure, progressive'), [], "another concept's KB name");
  assert.deepEqual(table.lookup('myopathy'), [3], "kept: not a KB name under the strict key (the retriever asks the KB's loose key first)");
  assert.equal(new XrefNameTable([concept('X:1', 'x', [])], isKbName, normalizeName, looseKey).empty, true);
});

test('retrieval: xref names answer only when no KB name matches, strictly or under the loose key', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-xref-'));
  try {
    const encoder = new TrigramEncoder();
    const dir = join(root, 'idx');
    await buildIndex({ concepts: CONCEPTS, kbSources: ['kb.jsonl', 'doid.obo (xref names)'], kbChecksum: 'c'.repeat(64), encoder, model: { path: 'models/test', sha256: 'b'.repeat(64), precision: 'fp32' }, normalize: normalizeName, outDir: dir, progress: false });
    const index = await LinkIndex.open(dir, normalizeName);
    assert.deepEqual(index.concepts[0]!.xrefNames, ['nephropathy', 'KD', 'Renal failure, progressive'], 'kept in the index');
    assert.equal(index.names.size, 7, 'never encoded: the KB names only');
    const retriever = new CandidateRetriever(index);
    const loose = new LooseMatchTable(index.concepts, looseKey);
    const xrefNames = new XrefNameTable(index.concepts, (name) => index.exact.lookup(name).length > 0, normalizeName, looseKey);
    const top = (text: string, withXref = true) => {
      const lookups = nameLookups({ exact: index.exact, loose, xrefNames }, { loose: true, xrefNames: withXref, headNouns: [], inheritance: false, unqualified: false });
      const hits = retriever.retrieve([text], encoder.vector(text), { k: 3, lookups });
      return { id: index.concepts[hits[0]!.conceptIndex]!.id, via: hits[0]!.via, named: hits.filter((h) => h.lexical).length };
    };
    assert.deepEqual(top('nephropathy'), { id: 'MESH:D007674', via: 'xref', named: 1 });
    assert.equal(top('nephropathy', false).via, 'dense', 'without the table: dense only');
    assert.deepEqual(top('muscle wasting'), { id: 'MESH:D009133', via: 'xref', named: 1 });
    assert.deepEqual(top('Renal failure, progressive'), { id: 'MESH:C537000', via: 'exact', named: 1 }, 'a KB name wins; the xref name is never consulted');
    assert.deepEqual(top('myopathy'), { id: 'MESH:D009135', via: 'loose', named: 1 }, "the KB's loose key (Myopathies) comes before another vocabulary's name");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
