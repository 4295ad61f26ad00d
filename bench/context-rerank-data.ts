// Training and tuning data for the context-reading cross-encoder (issue 26;
// models/cuilink_models/train_context_crossencoder.py). Every gold mention of a PubTator corpus
// is linked by the shipped pipeline (KB, name lookups, abbreviations, dense + sparse retrieval,
// hierarchy preference) with its reranking step intercepted: the step receives the mention's
// top candidates exactly as the linker would hand them to a cross-encoder, and the query is built
// the way the linker builds it for a context-reading model (the mention between markers inside
// its context window, an in-note abbreviation expanded). Plus KB names in mention form without
// context (the ontology alone), so that a model trained on them keeps what the shipped one knows.
// One JSON line per query:
//   {part, noteId, mentionId, query, candidates: [{id, text}], positives: [candidate index], gold: [{id, text}]}
// `part` is `learn` or `tune` (the fixed tuning split of the corpus, src/eval/tuning-split.ts) or `kb`.
//   node --import tsx bench/context-rerank-data.ts --corpus FILE [--context-chars 100] [--candidates 20]
//        [--kb-queries 4000] [--seed 20261126] [--out FILE] [--index DIR]
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Concept } from '../src/kb/concept.ts';
import { openLinker } from '../src/link/open-linker.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import type { QueryBuilder } from '../src/link/linker.ts';
import { Reranker, type RerankItem } from '../src/rerank/reranker.ts';
import { buildQuery } from '../src/text/context-window.ts';
import { loadPubTatorCorpus, mentionKey } from '../src/eval/gold.ts';
import { tuneDocumentIds, TUNING_SPLIT_SEED } from '../src/eval/tuning-split.ts';
import { ensureBenchIndex } from './bench-index.ts';
import { lcg, mentionForm } from './kb-mention-form.ts';
import { MEDIC_KB_FLAGS, medicKb, requireBenchFiles } from './medic-kb.ts';

const { values } = parseArgs({
  options: {
    ...MEDIC_KB_FLAGS,
    index: { type: 'string' },
    corpus: { type: 'string', default: join('..', 'shared', 'data', 'ncbi-disease', 'NCBItrainset_corpus.txt') },
    'context-chars': { type: 'string', default: '100' },
    candidates: { type: 'string', default: '20' },
    'kb-queries': { type: 'string', default: '4000' },
    seed: { type: 'string', default: '20261126' },
    out: { type: 'string', default: join('models', 'work', 'context-ce', 'data.jsonl') },
  },
});
const medic = medicKb(values);
requireBenchFiles('context-rerank-data', [...medic.files, values.corpus]);
const contextChars = Number(values['context-chars']);
const candidates = Number(values.candidates);
const { indexDir } = ensureBenchIndex({ ...medic, modelDir: DEFAULT_MODEL_DIR, indexDir: values.index, rebuild: false, provider: 'cpu', log: console.log });
const linker = await openLinker({
  indexDir,
  provider: 'cpu',
  // `always` hands every mention's head to the (intercepted) reranker; weight 0 keeps retrieval's order.
  config: { retrieveK: candidates, topK: candidates, rerank: { policy: 'always', candidates, weight: 0, prune: false }, cache: { maxEntries: 0 } },
  log: () => {},
});
// The linker keeps its parts private; this tool intercepts its rerank step on purpose.
const parts = (linker as unknown as { parts: { reranker?: Reranker; rerankQuery: QueryBuilder } }).parts;
const shipped = parts.reranker;
if (!shipped) throw new Error('no cross-encoder: the shipped one (models/default/crossencoder) is needed for its candidate text');
const spec = { mode: 'context' as const, markers: ['[M]', '[/M]'] as const, contextChars };
const pendingMentions: string[] = [];
parts.rerankQuery = (text, mention, override) => {
  pendingMentions.push(mention.id);
  return buildQuery(text, mention, spec, override);
};
let current: { part: string; noteId: string; gold: (mentionId: string) => string[] } | undefined;
const conceptById = new Map<string, Concept>();
for (const c of linker.index.concepts) for (const id of [c.id, ...c.altIds]) if (!conceptById.has(id)) conceptById.set(id, c);
mkdirSync(dirname(values.out), { recursive: true });
const out = createWriteStream(values.out);
const counts = { learn: 0, tune: 0, kb: 0, goldInCandidates: 0, goldAdded: 0, goldUnknown: 0 };
parts.reranker = {
  modelId: 'intercept',
  candidateText: (c: Concept) => shipped.candidateText(c),
  rerank: async (items: readonly RerankItem[]) => {
    for (const item of items) {
      const mentionId = pendingMentions.shift()!;
      const goldIds = current!.gold(mentionId);
      const goldConcepts = [...new Set(goldIds.map((id) => conceptById.get(id)).filter((c): c is Concept => c !== undefined))];
      const goldSet = new Set(goldConcepts);
      const positives = item.candidates.flatMap((c, i) => (goldSet.has(c) ? [i] : []));
      if (goldConcepts.length === 0) counts.goldUnknown++;
      else if (positives.length > 0) counts.goldInCandidates++;
      else counts.goldAdded++;
      const record = {
        part: current!.part,
        noteId: current!.noteId,
        mentionId,
        query: item.query,
        candidates: item.candidates.map((c) => ({ id: c.id, text: shipped.candidateText(c) })),
        positives,
        gold: goldConcepts.map((c) => ({ id: c.id, text: shipped.candidateText(c) })),
      };
      out.write(JSON.stringify(record) + '\n');
      counts[current!.part as 'learn' | 'tune' | 'kb']++;
    }
    return items.map((item) => new Float32Array(item.candidates.length));
  },
} as unknown as Reranker;

const t0 = performance.now();
const corpus = await loadPubTatorCorpus(values.corpus);
const tune = tuneDocumentIds(corpus.documentIds ?? corpus.notes.map((n) => n.noteId), { seed: TUNING_SPLIT_SEED });
for (const note of corpus.notes) {
  current = { part: tune.has(note.noteId) ? 'tune' : 'learn', noteId: note.noteId, gold: (mentionId) => corpus.gold.get(mentionKey(note.noteId, mentionId))?.ids ?? [] };
  await linker.linkNotes([note]);
}

const rand = lcg(Number(values.seed));
const { concepts } = linker.index;
for (let q = 0; q < Number(values['kb-queries']); q++) {
  const concept = concepts[Math.floor(rand() * concepts.length)]!;
  const names = [concept.name, ...concept.synonyms];
  const text = mentionForm(names[Math.floor(rand() * names.length)]!, rand);
  current = { part: 'kb', noteId: `kb${q}`, gold: () => [concept.id] };
  await linker.linkNotes([{ noteId: `kb${q}`, text, mentions: [{ id: 'm', start: 0, end: text.length, text, label: 'Disease' }] }]);
}
await new Promise((resolve) => out.end(resolve));
console.log(JSON.stringify({ ...counts, contextChars, candidates, seconds: Math.round((performance.now() - t0) / 1000), out: values.out }));
await linker.close();
