import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import type { NewMemoryRecord } from '../../../src/retrieve/memory-record.ts';
import { findAbbreviationDefinitions } from '../../../src/text/abbreviations.ts';
import { Linker, type AbbreviationFinder } from '../../../src/link/linker.ts';
import { MemoryEvidence } from '../../../src/link/memory-evidence.ts';
import { parseLinkConfig, type LinkConfigInput } from '../../../src/link/link-config.ts';
import type { LinkedMention, MentionInput } from '../../../src/link/types.ts';
import { AAPC_USE, AFAP_NOTE_TEXT, AFAP_USE, DM_CONCEPTS, DM_NOTE_TEXT, DM_UNDEFINED_NOTE_TEXT, DM_UNDEFINED_USE, DM_USE, LONG_FORM, POLYPOSIS_CONCEPTS, POLYPOSIS_NOTE_TEXT } from '../../fixtures/link/polyposis-memory.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';

// How the memory's votes are counted when a mention is an abbreviation with an in-note expansion,
// or has many prototypes of one other surface nearby (issue 25, the "AAPC" fault), and when the
// note defines a short form whose labels name another sense ("DM", "AS").

const encoder = new TrigramEncoder();
const MODEL = { id: 'test-trigram-encoder', sha256: 'd'.repeat(64), dims: encoder.dims };
const PLAIN = 'MESH:D011125';
const ATTENUATED = 'MESH:C538265';
let root: string;
let index: LinkIndex;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-memory-votes-'));
  await buildIndex({
    concepts: [...POLYPOSIS_CONCEPTS, ...DM_CONCEPTS], kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder,
    model: { path: 'm', sha256: MODEL.sha256, precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false,
  });
  index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
});
after(() => rmSync(root, { recursive: true, force: true }));

const labels = (n: number, text: string, id: string): NewMemoryRecord[] => Array.from({ length: n }, () => ({ text, label: 'Disease', ids: [id], source: 'test', time: 1 }));

/** The in-note definitions, found as the linker finds them (open-linker.ts). */
const findAbbreviations: AbbreviationFinder = (text) => new Map(findAbbreviationDefinitions(text, { initials: true }).map((d) => [d.shortForm, { longForm: d.longForm, start: d.longFormStart, end: d.longFormEnd }]));

async function link(records: NewMemoryRecord[], mention: MentionInput, config: LinkConfigInput = {}, text = POLYPOSIS_NOTE_TEXT): Promise<LinkedMention> {
  const store = MemoryStore.empty(MODEL, lowerNormalize);
  store.add(records, records.map((r) => encoder.vector(r.text)));
  const parsed = parseLinkConfig({ rerank: { policy: 'never' }, ...config });
  const evidence = new MemoryEvidence(store, index, parsed.memory);
  const linker = new Linker({
    index, retriever: new CandidateRetriever(index), encoder,
    biEncoderQuery: (_text, m, override) => override ?? m.text,
    rerankQuery: (_text, m) => m.text,
    findAbbreviations,
    config: parsed,
    versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: index.manifest.indexVersion },
    memory: { current: () => evidence },
    release: async () => {},
  });
  const [note] = await linker.linkNotes([{ noteId: 'n', text, mentions: [mention] }]);
  return note!.mentions.find((m) => m.mentionId === mention.id)!;
}

test('fixture: the note defines AAPC with a long form cut short, which names the plain polyposis exactly', async () => {
  const without = await link([], AAPC_USE);
  assert.equal(without.expandedFrom, 'AAPC');
  assert.equal(without.conceptId, PLAIN);
  assert.equal(without.via, 'abbreviation', 'the expansion is a guess: its KB name is no exact match of the mention');
});

test('labels of the mention as written outvote labels of its (wrong) in-note expansion', async () => {
  // Three agreeing labels of "AAPC" against five of the string the abbreviation finder guessed:
  // counted alike, the guess decided the plain polyposis with support 5.
  const m = await link([...labels(3, 'AAPC', ATTENUATED), ...labels(5, 'adenomatous polyposis coli', PLAIN)], AAPC_USE);
  assert.equal(m.conceptId, ATTENUATED);
  assert.equal(m.memoryDecided, true);
  assert.equal(m.memorySupport, 3);
  // As on the broker (3 : 2): the expansion's exact KB name casts no KB votes either.
  const reported = await link([...labels(3, 'AAPC', ATTENUATED), ...labels(2, 'adenomatous polyposis coli', PLAIN)], AAPC_USE);
  assert.equal(reported.conceptId, ATTENUATED);
  assert.equal(reported.memorySupport, 3);
});

test('the expansion still counts where the written text has no labels, or labels that disagree', async () => {
  const unseen = await link(labels(2, 'adenomatous polyposis coli', PLAIN), AAPC_USE);
  assert.equal(unseen.conceptId, PLAIN);
  assert.equal(unseen.memoryDecided, true);
  assert.equal(unseen.memorySupport, 2);
  // A short form labelled with two senses: the note's own definition settles it.
  const ambiguous = await link([...labels(1, 'AAPC', ATTENUATED), ...labels(1, 'AAPC', PLAIN), ...labels(2, 'adenomatous polyposis coli', PLAIN)], AAPC_USE);
  assert.equal(ambiguous.conceptId, PLAIN);
  assert.equal(ambiguous.memorySupport, 3);
});

test('many prototypes of one other surface count as one dense vote, not one each', async () => {
  // One label of the long form itself against nine of a near string: per prototype they summed to
  // 9 × 0.25 × 0.85 ≈ 1.9 votes and decided the plain polyposis with support ~2.
  const records = [...labels(1, 'attenuated adenomatous polyposis coli', ATTENUATED), ...labels(9, 'adenomatous polyposis coli', PLAIN)];
  const m = await link(records, LONG_FORM, { memory: { denseThreshold: 0.8 } });
  assert.equal(m.conceptId, ATTENUATED);
  assert.equal(m.memoryDecided, true);
  assert.equal(m.memorySupport, 1);
  // Distinct near surfaces still add up, each once at its best similarity.
  const two = await link([...labels(4, 'adenomatous polyposis coli', PLAIN), ...labels(4, 'adenomatous polyposis', PLAIN)], LONG_FORM, { memory: { denseThreshold: 0.5, denseWeight: 1 } });
  assert.equal(two.conceptId, PLAIN);
  const support = two.memorySupport ?? 0;
  assert.ok(support > 1 && support <= 2, String(support));
});

const DIABETES = 'MESH:D003920';
const MYOTONIC = 'MESH:D009223';

test('a short form the note defines keeps its sense against labels of another sense', async () => {
  const without = await link([], DM_USE, {}, DM_NOTE_TEXT);
  assert.equal(without.conceptId, DIABETES);
  assert.equal(without.via, 'abbreviation');
  // Six labels of "DM" as myotonic dystrophy (another corpus's sense), which also owns the KB name "DM":
  // they decided myotonic dystrophy, the short form's own name match testifying with them.
  const m = await link(labels(6, 'DM', MYOTONIC), DM_USE, {}, DM_NOTE_TEXT);
  assert.equal(m.conceptId, DIABETES);
  assert.equal(m.memoryDecided, false);
  // Labels of the defined sense still decide, and the long form's own labels count again.
  const agreeing = await link([...labels(6, 'DM', MYOTONIC), ...labels(2, 'DM', DIABETES)], DM_USE, {}, DM_NOTE_TEXT);
  assert.equal(agreeing.conceptId, DIABETES);
  assert.equal(agreeing.memoryDecided, true);
  assert.equal(agreeing.memorySupport, 2);
  const longForm = await link([...labels(6, 'DM', MYOTONIC), ...labels(3, 'diabetes mellitus', DIABETES)], DM_USE, {}, DM_NOTE_TEXT);
  assert.equal(longForm.conceptId, DIABETES);
  assert.equal(longForm.memorySupport, 3);
});

test('a sense only the memory proposes is no choice for a defined short form', async () => {
  // With two candidates the long form's neighbours leave myotonic dystrophy out: without a KB
  // name "DM" only the memory would put it on the list.
  const config: LinkConfigInput = { retrieveK: 2 };
  const m = await link(labels(6, 'DM', 'MESH:D009136'), DM_USE, config, DM_NOTE_TEXT);
  assert.notEqual(m.conceptId, 'MESH:D009136');
  assert.equal(m.memoryDecided, false);
});

test('a short form the note does not define still goes by its labels', async () => {
  const m = await link(labels(6, 'DM', MYOTONIC), DM_UNDEFINED_USE, {}, DM_UNDEFINED_NOTE_TEXT);
  assert.equal(m.conceptId, MYOTONIC);
  assert.equal(m.memoryDecided, true);
  assert.equal(m.memorySupport, 6);
});

test('a long form whose initials spell its short form testifies with its exact KB name', async () => {
  // Near-string labels ("familial adenomatous polyposis" as the plain polyposis) against the
  // definition's exact name; a large tie-break bonus stands in for a close rerank.
  const config: LinkConfigInput = { memory: { bonus: 0.5, denseThreshold: 0.5 } };
  const nearLabels = labels(5, 'familial adenomatous polyposis', PLAIN);
  const without = await link([], AFAP_USE, config, AFAP_NOTE_TEXT);
  assert.equal(without.conceptId, ATTENUATED);
  const m = await link(nearLabels, AFAP_USE, config, AFAP_NOTE_TEXT);
  assert.equal(m.conceptId, ATTENUATED);
  assert.equal(m.memoryDecided, false);
  // Labels of the short form itself learned a convention the KB's names lack: they still decide.
  const own = await link([...nearLabels, ...labels(3, 'AFAP', PLAIN)], AFAP_USE, config, AFAP_NOTE_TEXT);
  assert.equal(own.conceptId, PLAIN);
  assert.equal(own.memoryDecided, true);
  // Its three labels and one near string's dense vote.
  assert.ok((own.memorySupport ?? 0) > 3 && (own.memorySupport ?? 0) < 4, String(own.memorySupport));
  // A long form cut short ("adenomatous polyposis coli" for AAPC) never testifies: the tests above.
});
