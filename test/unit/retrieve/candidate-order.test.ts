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

test('k concepts come back even when the names of one concept crowd the nearest names', async () => {
  // 41 names of "heart attack" are nearer the query than any other concept's: the first fetch of
  // names (32 here) holds that concept alone, and the list used to stop at 1 of the 5 asked for.
  const encoder = new TrigramEncoder();
  const crowded: Concept = { ...concept('X:A', 'heart attack'), synonyms: Array.from({ length: 40 }, (_, i) => `heart attack ${i}`) };
  const others = Array.from({ length: 20 }, (_, i) => concept(`X:${i}`, `heart disease ${i}`));
  const root = mkdtempSync(join(tmpdir(), 'cuilink-crowd-'));
  try {
    await buildIndex({ concepts: [crowded, ...others], kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder, model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false });
    const index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
    const retriever = new CandidateRetriever(index);
    const hits = retriever.retrieve(['heart attacks'], encoder.vector('heart attacks'), { k: 5 });
    assert.equal(hits.length, 5);
    assert.equal(index.concepts[hits[0]!.conceptIndex]!.id, 'X:A');
    assert.equal(new Set(hits.map((h) => h.conceptIndex)).size, 5, 'one hit per concept');
    for (let i = 1; i < hits.length; i++) assert.ok(hits[i - 1]!.score >= hits[i]!.score, 'sorted by score');
    const few = (ci: number) => index.concepts[ci]!.id === 'X:A' || index.concepts[ci]!.id === 'X:3';
    assert.deepEqual(retriever.retrieve(['heart attacks'], encoder.vector('heart attacks'), { k: 5, allow: few }).map((h) => index.concepts[h.conceptIndex]!.id), ['X:A', 'X:3'], 'all there are when the filter allows fewer');
    assert.equal(retriever.retrieve(['heart attacks'], encoder.vector('heart attacks'), { k: 100 }).length, 21, 'every concept when k exceeds them');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
