import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { ExactNameVectors } from '../../../src/retrieve/exact-name-vectors.ts';
import { Reranker } from '../../../src/rerank/reranker.ts';
import { Linker } from '../../../src/link/linker.ts';
import { LinkCache } from '../../../src/link/link-cache.ts';
import { isContextFree, LinkMemo, stableStringify } from '../../../src/link/link-memo.ts';
import { candidatesThatCanWin, nextContender } from '../../../src/link/rerank-pruning.ts';
import { parseLinkConfig, type LinkConfigInput } from '../../../src/link/link-config.ts';
import type { NoteInput } from '../../../src/link/types.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

let root: string;
let index: LinkIndex;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-link-cache-'));
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder: new TrigramEncoder(),
    model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false,
  });
  index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
});
after(() => rmSync(root, { recursive: true, force: true }));

/** Counts the texts it encodes. */
class CountingEncoder extends TrigramEncoder {
  texts = 0;
  override async encode(texts: string[]): Promise<Float32Array[]> {
    this.texts += texts.length;
    return super.encode(texts);
  }
}

/** A pure pair scorer (each pair's logit depends on that pair only) that counts its pairs. */
const pureScorer = () => ({
  modelId: 'pure',
  pairs: 0,
  async score(pairs: { query: string; candidate: string }[]) {
    this.pairs += pairs.length;
    return Float32Array.from(pairs, (p) => ((p.query.length * 7 + p.candidate.length * 13) % 17) / 4 - 2);
  },
});

interface Options {
  batchScope?: 'note' | 'mention' | 'all';
  config?: LinkConfigInput;
  cache?: LinkCache;
  encoder?: CountingEncoder;
  scorer?: ReturnType<typeof pureScorer>;
  indexVersion?: string;
}

function linker(options: Options = {}) {
  const config = parseLinkConfig(options.config ?? {});
  const { cache: limits, ...settings } = config;
  const cache = options.cache ?? new LinkCache(limits);
  return new Linker({
    index, retriever: new CandidateRetriever(index), encoder: options.encoder ?? new CountingEncoder(),
    reranker: options.scorer ? new Reranker(options.scorer, { includeSemanticType: false }) : undefined,
    biEncoderQuery: (_text, m, override) => override ?? m.text,
    rerankQuery: (_text, m, override) => `[M] ${override ?? m.text} [/M]`,
    findAbbreviations: () => new Map(),
    config,
    batchScope: options.batchScope ?? 'mention',
    memo: cache.enabled ? new LinkMemo(cache, settings) : undefined,
    exactVectors: new ExactNameVectors(index, lowerNormalize),
    versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: options.indexVersion ?? index.manifest.indexVersion },
    release: async () => {},
  });
}

function note(noteId: string, mentions: string[]): NoteInput {
  let text = '';
  return {
    noteId,
    text: mentions.join(' ; '),
    mentions: mentions.map((m, i) => {
      const start = text.length;
      text += `${m} ; `;
      return { id: `m${i}`, start, end: start + m.length, text: m, label: 'Disease' };
    }),
  };
}

const strip = (notes: { linkedAt: number }[]) => notes.map((n) => ({ ...n, linkedAt: 0 }));

test('LinkCache evicts the least recently used entry by count and by bytes, and counts', () => {
  const value = { hits: [{ conceptIndex: 1, score: 0.5, similarity: 0.5, via: 'dense' as const, exact: false, lexical: false }], scores: [0.5], reranked: false };
  const byCount = new LinkCache({ maxEntries: 2, maxBytes: 1e9 });
  byCount.set('a', value);
  byCount.set('b', value);
  assert.ok(byCount.get('a'));
  byCount.set('c', value);
  assert.equal(byCount.get('b'), undefined, 'b was least recently used');
  assert.ok(byCount.get('a') && byCount.get('c'));
  assert.deepEqual({ ...byCount.stats(), bytes: 0 }, { hits: 3, misses: 1, evictions: 1, entries: 2, bytes: 0, hitRatio: 0.75, rerankOnly: 0 });

  const byBytes = new LinkCache({ maxEntries: 100, maxBytes: 500 });
  for (const key of ['k1', 'k2', 'k3', 'k4', 'k5']) byBytes.set(key, value);
  assert.ok(byBytes.stats().bytes <= 500);
  assert.ok(byBytes.stats().evictions > 0);
  assert.ok(byBytes.get('k5'));

  const off = new LinkCache({ maxEntries: 0, maxBytes: 1e9 });
  off.set('a', value);
  assert.equal(off.enabled, false);
  assert.equal(off.stats().entries, 0);
});

test('the cache answers repeats without the encoder and gives exactly the uncached links', async () => {
  const notes = [note('n1', ['asthma attack', 'lung inflamation', 'heart attack']), note('n2', ['lung inflamation', 'asthma attack', 'hi cholesterol'])];
  const scorer = pureScorer();
  const plain = await linker({ config: { cache: { maxEntries: 0 }, rerank: { policy: 'always' } }, scorer: pureScorer() }).linkNotes(notes);
  const encoder = new CountingEncoder();
  const cached = linker({ encoder, scorer, config: { rerank: { policy: 'always' } } });
  const first = await cached.linkNotes(notes.slice(0, 1));
  const second = await cached.linkNotes(notes.slice(1));
  assert.deepEqual(strip([...first, ...second]), strip(plain));
  assert.equal(encoder.texts, 4, 'four distinct mention texts encoded once each');
  assert.deepEqual({ hits: cached.cacheStats()!.hits, misses: cached.cacheStats()!.misses }, { hits: 2, misses: 4 });

  // Repeats within one call are linked once too.
  const oneCall = new CountingEncoder();
  const out = await linker({ encoder: oneCall }).linkNotes([note('n3', ['pneumonia x', 'pneumonia x', 'pneumonia x'])]);
  assert.equal(oneCall.texts, 1);
  assert.equal(new Set(out[0]!.mentions.map((m) => m.conceptId)).size, 1);
});

test('a different index version, link config or invalidate() never reads old entries', async () => {
  const cache = new LinkCache({ maxEntries: 100, maxBytes: 1e6 });
  const n = [note('n1', ['lung inflamation'])];
  await linker({ cache }).linkNotes(n);
  const swapped = new CountingEncoder();
  await linker({ cache, encoder: swapped, indexVersion: 'another-index' }).linkNotes(n);
  assert.equal(swapped.texts, 1, 'a new index version misses');
  const otherConfig = new CountingEncoder();
  await linker({ cache, encoder: otherConfig, config: { topK: 3 } }).linkNotes(n);
  assert.equal(otherConfig.texts, 1, 'a new link config misses');
  const same = new CountingEncoder();
  const l = linker({ cache, encoder: same });
  await l.linkNotes(n);
  assert.equal(same.texts, 0, 'same versions and config hit');
  l.invalidateCache();
  await l.linkNotes(n);
  assert.equal(same.texts, 1);
});

test('an exact KB name uses its stored vector: no encoding, same top-1', async () => {
  const encoder = new CountingEncoder();
  const withVectors = await linker({ encoder, config: { cache: { maxEntries: 0 } } }).linkNotes([note('n1', ['High Blood Pressure', 'lung inflamation'])]);
  assert.equal(encoder.texts, 1, 'only the non-exact mention is encoded');
  const encoded = await linker({ config: { cache: { maxEntries: 0 }, exactVectors: false } }).linkNotes([note('n1', ['High Blood Pressure', 'lung inflamation'])]);
  assert.deepEqual(withVectors[0]!.mentions.map((m) => [m.conceptId, m.score]), encoded[0]!.mentions.map((m) => [m.conceptId, m.score]));
  const vectors = new ExactNameVectors(index, lowerNormalize);
  const label = index.names.names.findIndex((name) => name === 'high blood pressure');
  assert.deepEqual(vectors.vectorFor(['High Blood Pressure']), index.hnsw.vector(label));
  assert.equal(vectors.vectorFor(['lung inflamation']), undefined);
});

test('rerank pruning scores fewer pairs and keeps the top-1 of scoring them all', async () => {
  assert.deepEqual(candidatesThatCanWin([0.9, 0.85, 0.7, 0.78, 0.79], 0.1), [0, 1, 4]);
  assert.deepEqual(candidatesThatCanWin([0.5, 0.5], 0), [0, 1]);
  assert.deepEqual(candidatesThatCanWin([0.9, 0.1], 1), [0, 1]);
  const mentions = ['asthma attack', 'lung inflamation', 'hi cholesterol', 'diabetis', 'paracetamol tabs', 'heart atack', 'colorectal cancr'];
  const full = pureScorer();
  const pruned = pureScorer();
  const a = await linker({ scorer: full, config: { rerank: { policy: 'always', prune: false, weight: 0.3 } } }).linkNotes([note('n', mentions)]);
  const b = await linker({ scorer: pruned, config: { rerank: { policy: 'always', weight: 0.3 } } }).linkNotes([note('n', mentions)]);
  assert.deepEqual(b[0]!.mentions.map((m) => [m.conceptId, m.score]), a[0]!.mentions.map((m) => [m.conceptId, m.score]));
  assert.ok(pruned.pairs < full.pairs, `${pruned.pairs} < ${full.pairs}`);
});

test('rerank rounds: the best-retrieved candidate first, then only those whose best case reaches the best final score so far', () => {
  const retrieval = [0.7, 0.9, 0.85, 0.6];
  assert.equal(nextContender(retrieval, 0.3, -Infinity, []), 1, 'the best-retrieved candidate is scored first');
  // Candidate 1 scored p = 0.9: best = 0.3·0.9 + 0.7·0.9 = 0.9. Best cases: 0.79, -, 0.895, 0.72.
  assert.equal(nextContender(retrieval, 0.3, 0.9, [1]), undefined, 'no candidate can beat 0.9');
  // With p = 0.2: best = 0.69; candidates 2 (0.895) and 0 (0.79) can, in retrieval order; 3 (0.72) too.
  assert.equal(nextContender(retrieval, 0.3, 0.69, [1]), 2, 'the next best-retrieved contender');
  assert.equal(nextContender(retrieval, 0.3, 0.69, [1, 2, 0]), 3, 'every contender is scored');
  assert.equal(nextContender([0.5, 0.5], 0.3, 0.35 + 0.3, [0]), 1, 'a candidate that can only tie is scored (ties go to concept order)');
});

test('per-mention pipelines (mention scope) link exactly as the stage-by-stage phases do', async () => {
  const mentions = ['asthma attack', 'lung inflamation', 'hi cholesterol', 'diabetis', 'High Blood Pressure', 'heart atack', 'colorectal cancr'];
  const notes = [note('a', mentions.slice(0, 4)), note('b', mentions.slice(3))];
  const config = { rerank: { policy: 'always', weight: 0.3 }, cache: { maxEntries: 0 } } as const;
  const pipelined = await linker({ scorer: pureScorer(), config }).linkNotes(notes);
  const phased = await linker({ scorer: pureScorer(), config, batchScope: 'all' }).linkNotes(notes);
  assert.deepEqual(strip(pipelined), strip(phased), 'the same links, scores and candidates');
  assert.ok(pipelined.flatMap((n) => n.mentions).some((m) => m.reranked), 'the reranker ran');
});

test('context-freedom and config hashing', () => {
  assert.equal(isContextFree({ mode: 'mention', contextChars: 64 }), true);
  assert.equal(isContextFree({ mode: 'context', contextChars: 0 }), true);
  assert.equal(isContextFree({ mode: 'context', contextChars: 32 }), false);
  assert.equal(stableStringify({ b: 1, a: { d: [1, 2], c: null } }), stableStringify({ a: { c: null, d: [1, 2] }, b: 1 }));
});
