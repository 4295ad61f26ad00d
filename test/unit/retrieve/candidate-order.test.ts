import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { LooseMatchTable } from '../../../src/retrieve/loose-match-table.ts';
import { looseKey } from '../../../src/text/loose-key.ts';
import type { Concept } from '../../../src/kb/concept.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

const concept = (id: string, name: string): Concept => ({ id, name, synonyms: [], semanticTypes: ['Disease'], parents: [], xrefs: [], altIds: [] });

test('loose name matches rank by their similarity, whether or not the dense search reached them', async () => {
  // Both share the mention's loose key; "Breast Tumor" is much nearer. Enough near fillers keep the
  // far one out of the dense search's reach, which used to sort it first (as if its similarity were 1).
  const encoder = new TrigramEncoder();
  const fillers = Array.from({ length: 400 }, (_, i) => concept(`X:F${i}`, `breast tumor ${String.fromCharCode(97 + (i % 26))}${i}`));
  const concepts = [concept('X:B', 'Tumours of the Breasts'), concept('X:A', 'Breast Tumor'), ...fillers];
  const root = mkdtempSync(join(tmpdir(), 'cuilink-order-'));
  try {
    await buildIndex({ concepts, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder, model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false });
    const index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
    const loose = new LooseMatchTable(index.concepts, looseKey);
    const [vector] = await encoder.encode(['breast tumors']);
    const hits = new CandidateRetriever(index).retrieve(['breast tumors'], vector!, { k: 5, lookups: [{ lookup: (t) => loose.lookup(t), via: 'loose' }] });
    const lexical = hits.filter((h) => h.lexical).map((h) => ({ id: index.concepts[h.conceptIndex]!.id, similarity: h.similarity }));
    assert.deepEqual(lexical.map((h) => h.id), ['X:A', 'X:B']);
    assert.ok(lexical[0]!.similarity > lexical[1]!.similarity);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
