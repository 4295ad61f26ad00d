// Every output field means what its doc string says (src/link/types.ts, schemas/linked-note.avsc,
// docs/confidence.md), checked on the real models over fixture KBs: exact names, short forms the
// note defines, plurals and misspellings, coordinations, garbage, with and without a calibration,
// with a labelled-mention memory; and the Avro record, `cuilink link` and `eval --predictions`
// carry the same values.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BiEncoder } from '../../../src/encode/bi-encoder.ts';
import { loadKb } from '../../../src/kb/load.ts';
import type { ConceptStore } from '../../../src/kb/concept-store.ts';
import { normalizeName } from '../../../src/text/normalize.ts';
import { loadPubTatorCorpus } from '../../../src/eval/gold.ts';
import { buildIndexFromKb } from '../../../src/link/build-index-from-kb.ts';
import { DEFAULT_MODEL_DIR } from '../../../src/link/default-index.ts';
import { openLinker, type OpenLinkerOptions } from '../../../src/link/open-linker.ts';
import { MemoryLearner, publishMemory } from '../../../src/link/memory-learner.ts';
import { CANDIDATE_SOURCES } from '../../../src/link/linking-stages.ts';
import type { Linker } from '../../../src/link/linker.ts';
import type { LinkedMention, LinkedNote, NoteInput } from '../../../src/link/types.ts';
import { avroToLinkedNote, linkedNoteToAvro, PlainAvroCodec } from '../../../src/stream/avro/index.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever, ontologyRoots } from '../../../src/retrieve/candidate-retriever.ts';
import { SparseFusion } from '../../../src/retrieve/sparse-fusion.ts';
import { buildQuery } from '../../../src/text/context-window.ts';

const KB_FILES = ['test/fixtures/kb/clinical-mini.obo', 'test/fixtures/eval/mini-kb.jsonl', 'test/fixtures/kb/ctd-tiny.tsv'];
/** Stages whose hits rank in the name-lookup tier, before every dense hit (linking-stages.ts). */
const LOOKUP_TIER = new Set(['exact', 'abbreviation', 'loose', 'xref', 'head-noun', 'inheritance', 'unqualified', 'composite']);

function note(noteId: string, text: string, spans: [string, string?][]): NoteInput {
  let from = 0;
  const mentions = spans.map(([surface, label = 'Disease'], i) => {
    const start = text.indexOf(surface, from);
    assert.ok(start >= 0, `fixture: '${surface}' not in note ${noteId}`);
    from = start + surface.length;
    return { id: `m${i}`, start, end: start + surface.length, text: surface, label };
  });
  return { noteId, text, mentions };
}

const NOTES: NoteInput[] = [
  // Short forms the note defines: a long form that is a KB name, one whose short form is a KB name of another concept (NIDDM), one inside a longer mention.
  note('abbr', 'Chronic obstructive pulmonary disease (COPD), severe COPD; non-insulin-dependent diabetes (NIDDM) and NIDDM again; high blood pressure (HBP), HBP.', [
    ['Chronic obstructive pulmonary disease'], ['COPD'], ['severe COPD'], ['non-insulin-dependent diabetes'], ['NIDDM'], ['NIDDM'], ['high blood pressure'], ['HBP'],
  ]),
  // Exact names under case and punctuation, names two concepts share, plurals, British spelling, misspellings, word order.
  note('names', 'Breast-Cancer, HIGH BLOOD PRESSURE, Diabetes, heart attacks, Seizures, anaemia, iron-deficiency anaemias, pnuemonia, hypertensoin, Anemia Hemolytic, type 2 diabetes, adult onset diabetes, asthma attack, lung infections, neoplasm, MI, HTN.', [
    ['Breast-Cancer'], ['HIGH BLOOD PRESSURE'], ['Diabetes'], ['heart attacks'], ['Seizures'], ['anaemia'], ['iron-deficiency anaemias'], ['pnuemonia'], ['hypertensoin'], ['Anemia Hemolytic'], ['type 2 diabetes'], ['adult onset diabetes'], ['asthma attack'], ['lung infections'], ['neoplasm'], ['MI'], ['HTN'],
  ]),
  // Coordinations, eponym-ish and qualified forms, garbage, and a label the type filter variant empties.
  note('odd', 'Breast and ovarian neoplasms; breast or ovarian neoplasms; chronic obstructive pulmonary; familial asthma; a purple spoon; xqzt 42; the; 2019; ---; aspirin.', [
    ['Breast and ovarian neoplasms'], ['breast or ovarian neoplasms'], ['chronic obstructive pulmonary'], ['familial asthma'], ['purple spoon'], ['xqzt 42'], ['the'], ['2019'], ['---'], ['aspirin', 'Chemical'],
  ]),
];

/** Labels for the memory variant: an id outside the KB, a mislabel against a looser match, a misspelling, a memory-only concept, a surface two exact names own. */
const MEMORY_LABELS: [string, string, number][] = [['purple spoon', 'LOCAL:0001', 2], ['heart attacks', 'MESH:D001249', 2], ['pnuemonia', 'FX:0000050', 1], ['xqzt 42', 'FX:0000080', 1], ['Diabetes', 'MESH:D003924', 1]];

let root: string;
let indexDir: string;
let memoryRoot: string;
let kb: ConceptStore;
let encoder: BiEncoder;
const linkers = new Map<string, Linker>();

/** The variants: each a real linker, differing only in options a user sets (`memory`: served the labels above). */
const VARIANTS: Record<string, Omit<OpenLinkerOptions, 'indexDir' | 'memoryDir'> & { memory?: true }> = {
  calibrated: {},
  uncalibrated: { rerankerDir: false },
  'every stage, always reranked': { config: { rerank: { policy: 'always' }, query: { abbreviationInventory: true, headNouns: ['disease'] } } },
  'type filter that empties a label': { config: { typeFilter: { Chemical: ['no such type'] } } },
  'score threshold': { rerankerDir: false, config: { nil: { threshold: 0.5 } } },
  memory: { memory: true },
};

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-output-fields-'));
  indexDir = join(root, 'idx');
  memoryRoot = join(root, 'memory');
  await buildIndexFromKb({ kbPaths: KB_FILES, modelDir: DEFAULT_MODEL_DIR, provider: 'cpu', threads: 1, outDir: indexDir, progress: false, log: () => {} });
  kb = await loadKb(KB_FILES);
  encoder = await BiEncoder.open(DEFAULT_MODEL_DIR, { provider: 'cpu', threads: 1 });
  const learner = new MemoryLearner(encoder);
  const store = learner.openOrCreate(memoryRoot);
  await learner.add(store, MEMORY_LABELS.flatMap(([text, id, n]) => Array.from({ length: n }, (_, k) => ({ record: { text, label: 'Disease', ids: [id], source: 'test', time: 1, noteId: `label-${k}` } }))));
  publishMemory(store, memoryRoot);
  for (const [name, { memory, ...options }] of Object.entries(VARIANTS)) {
    linkers.set(name, await openLinker({ indexDir, provider: 'cpu', threads: 1, log: () => {}, ...options, memoryDir: memory ? memoryRoot : undefined, memoryPollMs: 0 }));
  }
});

after(async () => {
  for (const linker of linkers.values()) await linker.close();
  await encoder?.close();
  rmSync(root, { recursive: true, force: true });
});

/** The KB names of a concept, as the exact stage compares them. */
function kbNames(conceptId: string): Set<string> | undefined {
  const concept = kb.get(conceptId);
  return concept && new Set([concept.name, ...concept.synonyms].map(normalizeName));
}

/** Every documented meaning of a linked mention's fields; returns the violations found. */
function violations(m: LinkedMention, text: string, linker: Linker): string[] {
  const out: string[] = [];
  const say = (ok: boolean, what: string) => {
    if (!ok) out.push(`'${text}' (${m.mentionId}): ${what}`);
  };
  const { candidates: cs } = m;
  const top = cs[0];
  const config = linker.config;
  const key = normalizeName(text);
  for (const [i, c] of cs.entries()) {
    const names = kbNames(c.conceptId);
    const at = `candidates[${i}] ${c.conceptId} (${c.via})`;
    say(CANDIDATE_SOURCES.includes(c.via as never), `${at}: via is a candidate-producing stage of LINKING_STAGES`);
    say(Number.isFinite(c.score) && c.score <= 1 && Number.isFinite(c.retrievalScore) && c.retrievalScore <= 1, `${at}: score ${c.score} and retrievalScore ${c.retrievalScore} finite, at most 1`);
    if (names === undefined) {
      say(c.via === 'memory' && !c.exact && c.semanticTypes.length === 0 && c.name === c.conceptId && c.retrievalScore === 0, `${at}: an id outside the KB only from the memory, named by its id, no types, never exact, retrievalScore 0`);
      continue;
    }
    const concept = kb.get(c.conceptId)!;
    say(c.name === concept.name && JSON.stringify(c.semanticTypes) === JSON.stringify(concept.semanticTypes), `${at}: name and types are the KB concept's`);
    // `exact`: the mention's own text is a KB name of the concept, checked against the KB itself.
    say(c.exact === names.has(key), `${at}: exact ${c.exact}, but the mention ${names.has(key) ? 'is' : 'is not'} a KB name of it`);
    say(!c.exact || c.via === 'exact' || c.via === 'abbreviation', `${at}: exact only from the exact stage (or a defined short form that is itself a name)`);
    const nameMatch = c.exact || c.via === 'abbreviation';
    say(nameMatch === (c.retrievalScore === 1), `${at}: retrievalScore ${c.retrievalScore} is 1 exactly for an exact name match`);
    say(c.score !== 1 || nameMatch, `${at}: score 1 only for an exact name match`);
  }
  say(new Set(cs.map((c) => c.conceptId)).size === cs.length && cs.length <= config.topK, 'distinct candidates, at most topK');
  // The link is the first candidate, named as it is; NIL keeps the candidates but names nothing.
  if (m.nil) say(m.conceptId === null && m.conceptName === null && m.semanticTypes.length === 0, 'NIL: conceptId, conceptName null, no semantic types');
  else say(top !== undefined && m.conceptId === top.conceptId && m.conceptName === top.name && JSON.stringify(m.semanticTypes) === JSON.stringify(top.semanticTypes), 'a link is candidates[0]');
  say(m.score === (top?.score ?? 0), `score ${m.score} is candidates[0].score`);
  say(m.via === (top === undefined ? null : m.memoryDecided ? 'memory' : top.via), `via ${m.via}: candidates[0].via, memory when the memory decided, null without candidates`);
  // Confidence and P(in KB): probabilities with a calibration and a candidate, else null; confidence = P(right | in KB) · P(in KB).
  if (linker.calibrated && top !== undefined) {
    for (const [name, p] of [['confidence', m.confidence], ['inKb', m.inKb]] as const) say(typeof p === 'number' && p >= 0 && p <= 1, `${name} ${p} is a probability (calibrated linker)`);
    say(m.confidence === null || m.inKb == null || m.confidence <= m.inKb, `confidence ${m.confidence} ≤ inKb ${m.inKb}`);
  } else {
    say(m.confidence === null && m.inKb == null, `confidence ${m.confidence}, inKb ${m.inKb}: null without a calibration or a candidate`);
  }
  // NIL: exactly the documented rule (schemas/linked-note.avsc `nil`).
  const under = (p: number | null | undefined, bar: number) => p != null && p < bar;
  say(m.nil === (top === undefined || m.score < config.nil.threshold || under(m.confidence, config.nil.confidence) || under(m.inKb, config.nil.inKb)), `nil ${m.nil} by the documented rule (confidence ${m.confidence}, inKb ${m.inKb}, score ${m.score})`);
  // Order (Candidate.score): where nothing reordered the retrieval's list, name-lookup hits before dense ones, those by score.
  if (!m.reranked && linker.versions.memoryVersion === null) {
    const firstDense = cs.findIndex((c) => !LOOKUP_TIER.has(c.via));
    const dense = firstDense < 0 ? [] : cs.slice(firstDense);
    say(dense.every((c, i) => !LOOKUP_TIER.has(c.via) && (i === 0 || dense[i - 1]!.score >= c.score)), 'name-lookup hits first, then dense hits by score');
  }
  // Score (Candidate.score): the retrieval score less the hierarchy's penalty for a name match; mixed with the cross-encoder's probability when reranked.
  const { penalty } = config.hierarchy;
  const weight = config.rerank.weight;
  for (const c of cs.filter((c) => c.via !== 'memory')) {
    const less = c.retrievalScore - c.score;
    if (!m.reranked) say([0, 1, 2].some((k) => (k === 0 || LOOKUP_TIER.has(c.via)) && Math.abs(less - k * penalty) < 1e-9), `${c.conceptId} (${c.via}): score ${c.score} is retrievalScore ${c.retrievalScore} (less a hierarchy penalty)`);
    else say(c.score <= weight + (1 - weight) * c.retrievalScore + 1e-9, `${c.conceptId} (${c.via}): reranked score ${c.score} at most w + (1 - w)·retrievalScore`);
  }
  if (m.memoryDecided) say(m.via === 'memory' && (m.memorySupport ?? 0) >= config.memory.minSupport && !m.reranked, 'a memory decision: via memory, support at least minSupport, not reranked');
  if (linker.versions.memoryVersion === null) say(m.memoryDecided === false && m.memorySupport === 0, 'no memory, no memory decision or support');
  say(m.expandedFrom === null || m.expandedFrom === text, 'expandedFrom is the mention as written');
  return out;
}

async function linkWith(name: string): Promise<LinkedNote[]> {
  return linkers.get(name)!.linkNotes(NOTES);
}

const textOf = (noteId: string, mentionId: string) => NOTES.find((n) => n.noteId === noteId)!.mentions.find((m) => m.id === mentionId)!.text;

for (const name of Object.keys(VARIANTS)) {
  test(`every field means what it says: ${name}`, async () => {
    const linker = linkers.get(name)!;
    const linked = await linkWith(name);
    const found = linked.flatMap((n) => n.mentions.flatMap((m) => violations(m, textOf(n.noteId, m.mentionId), linker)));
    assert.deepEqual(found, []);
    // The Avro record carries every field, under the same name, with the same value.
    const codec = new PlainAvroCodec();
    for (const n of linked) {
      const encoded = await codec.encode('LinkedNote', linkedNoteToAvro(n));
      const back = avroToLinkedNote(await codec.decode('LinkedNote', encoded.value, encoded.headers));
      assert.deepEqual(back, { ...n, memoryVersion: n.memoryVersion ?? null, mentions: n.mentions.map((m) => ({ ...m, inKb: m.inKb ?? null })) });
    }
  });
}

test('retrievalScore is the similarity the docs say: 1 for a name match, else the cosine to the nearest name, fused with the trigram score outside the name lookups', async () => {
  const index = await LinkIndex.open(indexDir, normalizeName);
  const retriever = new CandidateRetriever(index);
  const roots = ontologyRoots(index.concepts);
  for (const name of ['uncalibrated', 'every stage, always reranked']) {
    const sparse = new SparseFusion(index.concepts, normalizeName, linkers.get(name)!.config.query.sparseWeight);
    for (const [n, linked] of (await linkWith(name)).entries()) {
      for (const m of linked.mentions) {
        // Read through an in-note long form, or through a KB name's stored vector: not the mention's own vector.
        if (m.expandedFrom !== null || m.candidates.some((c) => c.exact)) continue;
        const mention = NOTES[n]!.mentions.find((x) => x.id === m.mentionId)!;
        const [vector] = await encoder.encode([buildQuery(NOTES[n]!.text, mention, encoder.manifest.query)], [0]);
        const cosine = (conceptIndex: number) => retriever.nearestNameSimilarity(vector!, conceptIndex);
        const fused = (conceptIndex: number, similarity: number) => sparse.fuse([mention.text], [{ conceptIndex, score: similarity, similarity, via: 'dense', exact: false, lexical: false }])[0]!.score;
        // An inventory sense joins the dense hits at the best dense similarity (candidate-retriever.ts).
        const bestDense = Math.max(0, ...index.concepts.flatMap((_, i) => (roots.has(i) ? [] : [cosine(i)])));
        for (const c of m.candidates) {
          const ci = index.indexOf(c.conceptId)!;
          const want = c.via === 'abbreviation' ? 1 : LOOKUP_TIER.has(c.via) ? cosine(ci) : fused(ci, c.via === 'inventory' ? bestDense : cosine(ci));
          assert.ok(Math.abs(c.retrievalScore - want) < 1e-4, `${name}: '${mention.text}' ${c.conceptId} (${c.via}): retrievalScore ${c.retrievalScore}, the docs say ${want}`);
        }
      }
    }
  }
});

test('the guard has teeth: the cases it checks occur (short forms, a short form that is a name of another concept, looser stages, NIL, memory decisions)', async () => {
  const seen = new Set<string>();
  for (const name of Object.keys(VARIANTS)) {
    for (const n of await linkWith(name)) {
      for (const m of n.mentions) {
        if (m.nil) seen.add('nil');
        if (m.memoryDecided) seen.add(m.conceptId !== null && kb.get(m.conceptId) === undefined ? 'memory outside the KB' : 'memory');
        if (m.expandedFrom !== null && m.candidates.some((c) => c.via === 'abbreviation' && !c.exact) && m.candidates.some((c) => c.via === 'exact' && c.exact)) seen.add('a defined short form that is a name of another concept');
        for (const c of m.candidates) seen.add(`${c.via}${c.exact ? ' exact' : ''}`);
      }
    }
  }
  for (const want of ['exact exact', 'abbreviation', 'a defined short form that is a name of another concept', 'loose', 'composite', 'head-noun', 'dense', 'inventory', 'memory', 'memory outside the KB', 'nil']) assert.ok(seen.has(want), `${want} among ${[...seen].join(', ')}`);
});

test('cuilink link and eval --predictions carry the linker\'s values', async () => {
  const linker = linkers.get('calibrated')!;
  const input = join(root, 'notes.jsonl');
  const output = join(root, 'linked.jsonl');
  writeFileSync(input, NOTES.map((n) => JSON.stringify(n)).join('\n'));
  const run = spawnSync(process.execPath, ['bin/cuilink.js', 'link', '--index', indexDir, '--in', input, '--out', output, '--provider', 'cpu', '--threads', '1'], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(run.status, 0, run.stderr);
  const stamp = (notes: LinkedNote[]) => notes.map((n) => ({ ...n, linkedAt: 0 }));
  const lines = readFileSync(output, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as LinkedNote);
  assert.deepEqual(stamp(lines), stamp(JSON.parse(JSON.stringify(await linker.linkNotes(NOTES))) as LinkedNote[]));

  // The same notes as a PubTator corpus (title, then the rest as the abstract).
  const corpusFile = join(root, 'corpus.PubTator');
  const pmids = NOTES.map((_, i) => String(9000 + i));
  writeFileSync(corpusFile, NOTES.map((n, i) => [`${pmids[i]}|t|${n.text.slice(0, n.text.indexOf(' '))}`, `${pmids[i]}|a|${n.text.slice(n.text.indexOf(' ') + 1)}`, ...n.mentions.map((m) => `${pmids[i]}\t${m.start}\t${m.end}\t${m.text}\t${m.label}\tD001249`), ''].join('\n')).join('\n'));
  const predictions = join(root, 'predictions.jsonl');
  const evalRun = spawnSync(process.execPath, ['bin/cuilink.js', 'eval', '--index', indexDir, '--corpus', corpusFile, '--predictions', predictions, '--provider', 'cpu', '--threads', '1'], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(evalRun.status, 0, evalRun.stderr);
  const corpus = await loadPubTatorCorpus(corpusFile);
  const expected = new Map((await linker.linkNotes(corpus.notes)).flatMap((n) => n.mentions.map((m) => [`${n.noteId}/${m.mentionId}`, m] as const)));
  const rows = readFileSync(predictions, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { noteId: string; mentionId: string; predicted: string[]; nil: boolean; topScore: number; confidence: number | null; via: string | null; scores: { confidence: number | null } });
  assert.equal(rows.length, expected.size);
  for (const row of rows) {
    const m = expected.get(`${row.noteId}/${row.mentionId}`)!;
    assert.deepEqual([row.predicted, row.nil, row.via, row.topScore, row.confidence, row.scores.confidence], [m.candidates.map((c) => c.conceptId), m.nil, m.via, m.confidence, m.confidence, m.confidence], `${row.noteId}/${row.mentionId}`);
  }
});
