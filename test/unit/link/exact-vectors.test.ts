import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Concept } from '../../../src/kb/concept.ts';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { ExactNameVectors } from '../../../src/retrieve/exact-name-vectors.ts';
import { Reranker } from '../../../src/rerank/reranker.ts';
import { Linker, type AbbreviationFinder } from '../../../src/link/linker.ts';
import { parseLinkConfig, type LinkConfigInput } from '../../../src/link/link-config.ts';
import type { NoteInput } from '../../../src/link/types.ts';
import { normalizeName } from '../../../src/text/normalize.ts';
import { TrigramEncoder } from '../../support/trigram-encoder.ts';

// config.exactVectors promises the top-1 of encoding the mention: a stored name vector may only
// stand in where the top-1 cannot depend on the vector. The KB's names normalize like the
// mentions ("heart-attack" = "heart attack", "Diseases," = "Diseases") but the stand-in encoder
// reads their punctuation, so a stored vector and an encoded one find different dense neighbours.
const concept = (id: string, name: string, parents: string[] = []): Concept => ({ id, name, synonyms: [], semanticTypes: ['Disease'], parents, xrefs: [], altIds: [] });
const CONCEPTS: Concept[] = [
  concept('T:MI', 'heart attack'),
  concept('T:RTAT', 'Rt-At Syndrome'),
  concept('T:HF', 'Heart Failure'),
  concept('T:HL', 'Hearing Loss'),
  concept('T:TACHY', 'Tachycardia'),
];
// "Diseases" stands over the whole ontology (ontologyRoots): never a candidate.
const ROOTED: Concept[] = [
  concept('T:ROOT', 'Diseases'),
  concept('T:RARE', 'Rare Diseases', ['T:ROOT']),
  concept('T:INHERITED', 'Diseases, Inherited', ['T:ROOT']),
  concept('T:EYE', 'Eye Diseases', ['T:ROOT']),
];

let root: string;
let index: LinkIndex;
let rooted: LinkIndex;
const encoder = new TrigramEncoder();

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-exact-vectors-'));
  for (const [dir, concepts] of [['idx', CONCEPTS], ['rooted', ROOTED]] as const) {
    await buildIndex({
      concepts, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder,
      model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: normalizeName, outDir: join(root, dir), progress: false,
    });
  }
  index = await LinkIndex.open(join(root, 'idx'), normalizeName);
  rooted = await LinkIndex.open(join(root, 'rooted'), normalizeName);
});
after(() => rmSync(root, { recursive: true, force: true }));

/** `long form (SF)`, the long form one word that may carry hyphens. */
const findAbbreviations: AbbreviationFinder = (text) => {
  const map = new Map<string, { longForm: string; start: number; end: number }>();
  for (const m of text.matchAll(/([\w-]+) \((\w+)\)/g)) map.set(m[2]!, { longForm: m[1]!, start: m.index!, end: m.index! + m[1]!.length });
  return map;
};

/** A cross-encoder stand-in that prefers the candidates whose name contains `preferred`. */
const scorerPreferring = (preferred: string) => ({
  modelId: 'test-scorer',
  async score(pairs: { query: string; candidate: string }[]) {
    return Float32Array.from(pairs, (p) => (p.candidate.includes(preferred) ? 4 : -4));
  },
});

function linker(on: LinkIndex, config: LinkConfigInput, reranker?: Reranker) {
  return new Linker({
    index: on, retriever: new CandidateRetriever(on), encoder, reranker,
    biEncoderQuery: (_text, m, override) => override ?? m.text,
    rerankQuery: (_text, m, override) => `[M] ${override ?? m.text} [/M]`,
    findAbbreviations,
    config: parseLinkConfig(config),
    batchScope: 'mention',
    exactVectors: new ExactNameVectors(on, normalizeName),
    versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: on.manifest.indexVersion },
    release: async () => {},
  });
}

async function topOnes(on: LinkIndex, note: NoteInput, config: LinkConfigInput, reranker?: Reranker) {
  const [stored] = await linker(on, { ...config, exactVectors: true }, reranker).linkNotes([note]);
  const [encoded] = await linker(on, { ...config, exactVectors: false }, reranker).linkNotes([note]);
  return { stored: stored!.mentions[0]!, encoded: encoded!.mentions[0]! };
}

test("rerank.policy 'inexact': a short form read through its long form links as with exactVectors off", async () => {
  const text = 'A heart-attack (HA). HA again.';
  const start = text.lastIndexOf('HA');
  const note: NoteInput = { noteId: 'n', text, mentions: [{ id: 'm', start, end: start + 2, text: 'HA', label: 'Disease' }] };
  // Weight 1: the cross-encoder alone orders what it scores, so the top-1 is its pick among the top 3.
  const reranker = new Reranker(scorerPreferring('Rt-At'), { includeSemanticType: false });
  const { stored, encoded } = await topOnes(index, note, { rerank: { policy: 'inexact', weight: 1 } }, reranker);
  assert.deepEqual([encoded.via === 'dense', encoded.reranked], [true, true], 'the abbreviation hit is weighed against the dense tail');
  assert.equal(stored.conceptId, encoded.conceptId);
  // Under 'ambiguous' the abbreviation hit stands unscored: the stored vector is still used and cannot move the top-1.
  const ambiguous = await topOnes(index, note, { rerank: { policy: 'ambiguous', weight: 1 } }, reranker);
  assert.deepEqual([ambiguous.stored.conceptId, ambiguous.stored.reranked], ['T:MI', false]);
});

test('a mention whose only exact match is a whole-ontology root links as with exactVectors off', async () => {
  const text = 'Diseases, all of them.';
  const note: NoteInput = { noteId: 'n', text, mentions: [{ id: 'm', start: 0, end: 9, text: 'Diseases,', label: 'Disease' }] };
  const { stored, encoded } = await topOnes(rooted, note, { rerank: { policy: 'never' } });
  assert.notEqual(encoded.conceptId, 'T:ROOT', 'the root is no candidate');
  assert.equal(stored.conceptId, encoded.conceptId);
  assert.deepEqual(stored.candidates, encoded.candidates, 'no exact hit: every candidate comes from the dense search');
});
