// The memory's tie-break after a pruned rerank: the top-1 is that of scoring every candidate, and
// memorySupport counts the votes of the linked concept. Vectors by hand: cosines 0.97 / 0.965 / 0.9.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { Reranker } from '../../../src/rerank/reranker.ts';
import { Linker } from '../../../src/link/linker.ts';
import { MemoryEvidence } from '../../../src/link/memory-evidence.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { parseLinkConfig } from '../../../src/link/link-config.ts';
import { normalizeName } from '../../../src/text/normalize.ts';
const unit = (v: number[]) => { const n = Math.hypot(...v); return Float32Array.from(v, (x) => x / n); };
// mention vector m = e0; a name with cosine c to it: c·e0 + sqrt(1-c²)·e_k
const at = (c: number, k: number) => { const v = [c, 0, 0, 0, 0]; v[k] = Math.sqrt(1 - c * c); return unit(v); };
const table: Record<string, Float32Array> = { qq: unit([1, 0, 0, 0, 0]), alpha: at(0.97, 1), beta: at(0.965, 2), gamma: at(0.9, 3) };
const encoder = { dims: 5, modelId: 'table', async encode(t: string[]) { return t.map((s) => table[s] ?? unit([0, 0, 0, 0, 1])); } };
const c = (id: string, name: string) => ({ id, name, synonyms: [], semanticTypes: ['Disease'], parents: [], xrefs: [], altIds: [] });
async function linkWith(prune: boolean) {
  const root = mkdtempSync(join(tmpdir(), 'rl-'));
  await buildIndex({ concepts: [c('X:A', 'alpha'), c('X:B', 'beta'), c('X:C', 'gamma')], kbSources: ['f'], kbChecksum: 'c'.repeat(64), encoder, model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: normalizeName, outDir: join(root, 'idx'), progress: false });
  const index = await LinkIndex.open(join(root, 'idx'), normalizeName);
  const store = MemoryStore.empty({ id: 'table', sha256: 'd'.repeat(64), dims: 5 }, normalizeName);
  const recs = [{ text: 'qq', label: 'Disease', ids: ['X:B'], source: 't', time: 1 }, { text: 'qq', label: 'Disease', ids: ['X:C'], source: 't', time: 1 }];
  store.add(recs, recs.map(() => table.qq!));
  const scorer = { modelId: 's', async score(p: { candidate: string }[]) { return Float32Array.from(p, (x) => (x.candidate === 'alpha' ? 9 : -7)); } };
  const config = parseLinkConfig({ rerank: { prune }, query: { sparseWeight: 0 }, memory: { prior: 0 } });
  const evidence = new MemoryEvidence(store, index, config.memory);
  const linker = new Linker({ index, retriever: new CandidateRetriever(index), encoder, reranker: new Reranker(scorer, { includeSemanticType: false }),
    biEncoderQuery: (_t, m) => m.text, rerankQuery: (_t, m) => m.text, findAbbreviations: () => new Map(), config, batchScope: 'all',
    memory: { current: () => evidence }, versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: 'i' }, release: async () => {} });
  const [out] = await linker.linkNotes([{ noteId: 'n', text: 'qq', mentions: [{ id: 'm', start: 0, end: 2, text: 'qq', label: 'Disease' }] }]);
  return out!.mentions[0]!;
}

test('a candidate the pruned rerank left unscored does not win the memory tie-break', async () => {
  // The cross-encoder wants X:A; the memory holds one label each for X:B and X:C (no majority, so it only breaks ties).
  const pruned = await linkWith(true);
  const all = await linkWith(false);
  assert.equal(all.conceptId, 'X:A');
  assert.equal(pruned.conceptId, 'X:A');
  assert.deepEqual(pruned.candidates.map((c) => c.conceptId), all.candidates.map((c) => c.conceptId));
});

test('memorySupport counts the votes of the linked concept, not of the most-voted one', async () => {
  const m = await linkWith(false);
  assert.equal(m.memoryDecided, false);
  assert.equal(m.memorySupport, 0, 'X:A has no label');
});
