import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { Reranker } from '../../../src/rerank/reranker.ts';
import { Linker } from '../../../src/link/linker.ts';
import { LinkCache } from '../../../src/link/link-cache.ts';
import { LinkMemo } from '../../../src/link/link-memo.ts';
import { parseLinkConfig } from '../../../src/link/link-config.ts';
import type { MentionInput, NoteInput } from '../../../src/link/types.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

// rerank.repeatWindow with a cross-encoder that reads the note: which window a repeated mention
// is reranked in, and that the link cache then links it once.
let root: string;
let index: LinkIndex;
const encoder = new TrigramEncoder();

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-repeat-window-'));
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder,
    model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false,
  });
  index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
});
after(() => rmSync(root, { recursive: true, force: true }));

/** A context-reading stand-in: prefers the type 2 concept only when its window says "adult". */
function contextScorer() {
  const queries: string[] = [];
  return {
    modelId: 'test-context-scorer',
    queries,
    async score(pairs: { query: string; candidate: string }[]) {
      for (const p of pairs) queries.push(p.query);
      return Float32Array.from(pairs, (p) => ((p.query.includes('adult') === p.candidate.includes('Type 2')) ? 4 : -4));
    },
  };
}

function linker(repeatWindow: 'own' | 'first', scorer: ReturnType<typeof contextScorer>, memo?: LinkMemo, readsContext = true) {
  return new Linker({
    index, retriever: new CandidateRetriever(index), encoder,
    reranker: new Reranker(scorer, { includeSemanticType: true }),
    biEncoderQuery: (_text, m, override) => override ?? m.text,
    // 15 characters a side: a context window at test scale.
    rerankQuery: (text, m, override) => `${text.slice(Math.max(0, m.start - 15), m.start)}[M] ${override ?? m.text} [/M]${text.slice(m.end, m.end + 15)}`,
    rerankReadsContext: readsContext,
    findAbbreviations: () => new Map(),
    memo,
    config: parseLinkConfig({ rerank: { policy: 'always', weight: 1, repeatWindow } }),
    versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: index.manifest.indexVersion },
    release: async () => {},
  });
}

const TEXT = 'An adult with diabetis. Her son has diabetis too.';
function mentionsAt(...starts: number[]): MentionInput[] {
  return starts.map((start, i) => ({ id: `m${i}`, start, end: start + 'diabetis'.length, text: 'diabetis', label: 'Disease' }));
}
const first = TEXT.indexOf('diabetis');
const second = TEXT.lastIndexOf('diabetis');

test("'own': each occurrence is reranked in its own window", async () => {
  const scorer = contextScorer();
  const [out] = await linker('own', scorer).linkNotes([{ noteId: 'n', text: TEXT, mentions: mentionsAt(first, second) }]);
  assert.deepEqual(out!.mentions.map((m) => m.conceptId), ['MESH:D003924', 'MESH:D003920'], 'only the first window says "adult"');
  assert.equal(new Set(scorer.queries).size, 2, 'two windows read');
});

test("'first': a repeat reads its earliest occurrence's window, whatever the input order, and keeps its own position", async () => {
  const scorer = contextScorer();
  const note: NoteInput = { noteId: 'n', text: TEXT, mentions: mentionsAt(second, first) };
  const [out] = await linker('first', scorer).linkNotes([note]);
  assert.deepEqual(out!.mentions.map((m) => m.start), [second, first], 'output keeps the input order');
  assert.deepEqual(out!.mentions.map((m) => m.conceptId), ['MESH:D003924', 'MESH:D003924'], 'the repeat reads "adult" from the first window');
  assert.deepEqual([...new Set(scorer.queries)], ['An adult with [M] diabetis [/M]. Her son has d']);
});

test("'first' with the link cache: the repeat is linked once, and a later note's own first window is read", async () => {
  const scorer = contextScorer();
  const l = linker('first', scorer, new LinkMemo(new LinkCache({ maxEntries: 100, maxBytes: 1_000_000 }), {}));
  await l.linkNotes([{ noteId: 'n', text: TEXT, mentions: mentionsAt(first, second) }]);
  const pairsForOneMention = scorer.queries.length;
  const solo = contextScorer();
  await linker('first', solo).linkNotes([{ noteId: 'n', text: TEXT, mentions: mentionsAt(first) }]);
  assert.equal(pairsForOneMention, solo.queries.length, 'two occurrences cost one mention’s pairs');
  const other = 'A boy with diabetis since birth.';
  const [kid] = await l.linkNotes([{ noteId: 'k', text: other, mentions: mentionsAt(other.indexOf('diabetis')) }]);
  assert.equal(kid!.mentions[0]!.conceptId, 'MESH:D003920', 'no "adult" in this note: the other reading');
});

test('a context-free cross-encoder ignores repeatWindow', async () => {
  const scorer = contextScorer();
  const [out] = await linker('first', scorer, undefined, false).linkNotes([{ noteId: 'n', text: TEXT, mentions: mentionsAt(first, second) }]);
  assert.equal(new Set(scorer.queries).size, 2);
  assert.deepEqual(out!.mentions.map((m) => m.conceptId), ['MESH:D003924', 'MESH:D003920']);
});
