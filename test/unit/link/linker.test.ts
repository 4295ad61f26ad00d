import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { Reranker } from '../../../src/rerank/reranker.ts';
import { Linker, type AbbreviationFinder } from '../../../src/link/linker.ts';
import { parseLinkConfig, type LinkConfigInput } from '../../../src/link/link-config.ts';
import { validateNote } from '../../../src/link/validate-note.ts';
import type { NoteInput } from '../../../src/link/types.ts';
import { InputError } from '../../../src/kb/errors.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

let root: string;
let index: LinkIndex;
const encoder = new TrigramEncoder();

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-linker-'));
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder,
    model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false,
  });
  index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
});
after(() => rmSync(root, { recursive: true, force: true }));

// "(long form) (SF)" with the long form taken as the words before the parenthesis that match the SF's initials.
const naiveAbbreviations: AbbreviationFinder = (text) => {
  const map = new Map<string, { longForm: string; start: number; end: number }>();
  for (const m of text.matchAll(/((?:\w+ ){2})\((\w+)\)/g)) map.set(m[2]!, { longForm: m[1]!.trim(), start: m.index!, end: m.index! + m[1]!.trim().length });
  return map;
};

/** A cross-encoder stand-in whose preference is known: it favours candidates whose text contains `preferred`. */
const scorerPreferring = (preferred: string) => ({
  modelId: 'test-scorer',
  calls: 0,
  async score(pairs: { query: string; candidate: string }[]) {
    this.calls++;
    return Float32Array.from(pairs, (p) => (p.candidate.includes(preferred) ? 4 : -4));
  },
});

function linker(config: LinkConfigInput = {}, scorer?: ReturnType<typeof scorerPreferring>) {
  return new Linker({
    index, retriever: new CandidateRetriever(index), encoder,
    reranker: scorer ? new Reranker(scorer, { includeSemanticType: true }) : undefined,
    biEncoderQuery: (_text, m, override) => override ?? m.text,
    rerankQuery: (_text, m, override) => `[M] ${override ?? m.text} [/M]`,
    findAbbreviations: naiveAbbreviations,
    config: parseLinkConfig(config),
    versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: index.manifest.indexVersion },
    release: async () => {},
  });
}

function note(text: string, spans: [string, string][]): NoteInput {
  let from = 0;
  return {
    noteId: 'n1', text,
    mentions: spans.map(([mention, label], i) => {
      const start = text.indexOf(mention, from);
      from = start + mention.length;
      return { id: `m${i}`, start, end: start + mention.length, text: mention, label };
    }),
  };
}

test('links each mention to its concept with ranked candidates and versions', async () => {
  const [out] = await linker({ rerank: { policy: 'never' } }).linkNotes([note('Pt with heart attack and hypertensive crisis.', [['heart attack', 'Disease'], ['hypertensive', 'Disease']])]);
  assert.equal(out!.noteId, 'n1');
  assert.equal(out!.indexVersion, index.manifest.indexVersion);
  const [mi, htn] = out!.mentions;
  assert.equal(mi!.conceptId, 'MESH:D009203');
  assert.equal(mi!.candidates[0]!.exact, true);
  assert.equal(htn!.conceptId, 'MESH:D006973');
  assert.equal(htn!.nil, false);
  assert.ok(htn!.candidates.length <= 5);
  assert.deepEqual([htn!.start, htn!.end], [25, 37]);
});

test('the semantic-type filter keeps only allowed types for that NER label', async () => {
  const cfg = { rerank: { policy: 'never' as const }, typeFilter: { Chemical: ['Chemical'] } };
  const [out] = await linker(cfg).linkNotes([note('diabetes', [['diabetes', 'Chemical']])]);
  assert.ok(out!.mentions[0]!.candidates.every((c) => c.semanticTypes.includes('Chemical')));
  const [unfiltered] = await linker(cfg).linkNotes([note('diabetes', [['diabetes', 'Disease']])]);
  assert.equal(unfiltered!.mentions[0]!.conceptId, 'MESH:D003920');
});

test("an NER label named like an Object member ('constructor', 'toString', '__proto__') links like any other label", async () => {
  const cfg = { rerank: { policy: 'never' as const }, typeFilter: { Chemical: ['Chemical'] } };
  for (const label of ['constructor', 'toString', '__proto__']) {
    const [out] = await linker(cfg).linkNotes([note('diabetes', [['diabetes', label]])]);
    assert.equal(out!.mentions[0]!.conceptId, 'MESH:D003920', label);
  }
});

test('NIL when the best score is under the threshold, candidates kept', async () => {
  const [out] = await linker({ rerank: { policy: 'never' }, nil: { threshold: 0.95 } }).linkNotes([note('zzqx blorp', [['zzqx blorp', 'Disease']])]);
  const m = out!.mentions[0]!;
  assert.equal(m.nil, true);
  assert.equal(m.conceptId, null);
  assert.ok(m.candidates.length > 0);
});

/** A note whose one mention is the last occurrence of `shortForm` (after its definition). */
function laterUse(text: string, shortForm: string): NoteInput {
  const n = note(text, [[shortForm, 'Disease']]);
  n.mentions[0]!.start = text.lastIndexOf(shortForm);
  n.mentions[0]!.end = n.mentions[0]!.start + shortForm.length;
  return n;
}

test('an abbreviation defined in the note links through its long form', async () => {
  const n = laterUse('History of colorectal cancer (CRC). CRC recurred.', 'CRC');
  const [out] = await linker({ rerank: { policy: 'never' } }).linkNotes([n]);
  assert.equal(out!.mentions[0]!.conceptId, 'MESH:D015179');
  assert.equal(out!.mentions[0]!.expandedFrom, 'CRC');
  // "CRC" is itself a KB name of the concept: exact, though the long form found it first.
  assert.deepEqual([out!.mentions[0]!.via, out!.mentions[0]!.candidates[0]!.exact], ['abbreviation', true]);
  const [off] = await linker({ rerank: { policy: 'never' }, abbreviations: false }).linkNotes([n]);
  assert.equal(off!.mentions[0]!.expandedFrom, null);
  const [viaLongForm] = await linker({ rerank: { policy: 'never' } }).linkNotes([laterUse('A sudden heart attack (HA). HA again.', 'HA')]);
  assert.equal(viaLongForm!.mentions[0]!.conceptId, 'MESH:D009203');
  assert.deepEqual([viaLongForm!.mentions[0]!.via, viaLongForm!.mentions[0]!.candidates[0]!.exact], ['abbreviation', false], '"HA" is no KB name: not exact');
});

test('reranking reorders candidates; the cascade skips unambiguous exact matches', async () => {
  const scorer = scorerPreferring('Type 2');
  // Weight 1: the scorer alone decides (the default 0.1 keeps most of the retrieval score).
  const always = await linker({ rerank: { policy: 'always', weight: 1 } }, scorer).linkNotes([note('diabetes', [['diabetes', 'Disease']])]);
  assert.equal(always[0]!.mentions[0]!.conceptId, 'MESH:D003924');
  assert.equal(always[0]!.mentions[0]!.reranked, true);
  assert.ok(always[0]!.mentions[0]!.score > 0.9);

  const cascaded = scorerPreferring('Type 2');
  const out = await linker({ rerank: { policy: 'ambiguous' } }, cascaded).linkNotes([note('heart attack', [['heart attack', 'Disease']])]);
  assert.equal(out[0]!.mentions[0]!.reranked, false);
  assert.equal(cascaded.calls, 0, 'a unique exact match pays no cross-encoder call');
});

test('the inexact policy reranks all but a unique true exact name match', async () => {
  const exact = scorerPreferring('Type 2');
  const out = await linker({ rerank: { policy: 'inexact', weight: 1 } }, exact).linkNotes([note('heart attack', [['heart attack', 'Disease']])]);
  assert.equal(out[0]!.mentions[0]!.reranked, false);
  assert.equal(exact.calls, 0, 'a unique exact match pays no cross-encoder call');
  // A misspelt name is no exact match: reranked, and the scorer's choice wins at weight 1.
  const fuzzy = scorerPreferring('Type 2');
  const [misspelt] = await linker({ rerank: { policy: 'inexact', weight: 1 } }, fuzzy).linkNotes([note('diabetis', [['diabetis', 'Disease']])]);
  assert.equal(misspelt!.mentions[0]!.reranked, true);
  assert.equal(misspelt!.mentions[0]!.conceptId, 'MESH:D003924');
  assert.ok(fuzzy.calls > 0);
});

test('same input, same output', async () => {
  const input = [note('asthma and high cholesterol, pneumonia', [['asthma', 'Disease'], ['high cholesterol', 'Disease'], ['pneumonia', 'Disease']])];
  const a = await linker().linkNotes(input);
  const b = await linker().linkNotes(input);
  assert.deepEqual(a.map((n) => ({ ...n, linkedAt: 0 })), b.map((n) => ({ ...n, linkedAt: 0 })));
});

test('validateNote rejects bad spans and mismatched text with a code and no note text', () => {
  const good = note('fever and cough', [['fever', 'Disease']]);
  assert.equal(validateNote(good), good);
  const bad = { ...good, mentions: [{ ...good.mentions[0]!, end: 99 }] };
  assert.throws(() => validateNote(bad), (e: unknown) => e instanceof InputError && e.code === 'BAD_SPAN' && !e.message.includes('fever'));
  const mismatch = { ...good, mentions: [{ ...good.mentions[0]!, text: 'cough' }] };
  assert.throws(() => validateNote(mismatch), (e: unknown) => e instanceof InputError && e.code === 'SPAN_TEXT_MISMATCH');
  assert.throws(() => validateNote({ ...good, text: '' }), (e: unknown) => e instanceof InputError && e.code === 'EMPTY_NOTE');
  assert.throws(() => parseLinkConfig({ topK: 0 }), (e: unknown) => e instanceof InputError && /topK/.test(e.message));
  assert.throws(() => parseLinkConfig({ bogus: 1 }), InputError);
});
