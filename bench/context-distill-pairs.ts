// Distillation pairs for a smaller student of the context cross-encoder (issue 26's speed bar;
// models/cuilink_models/distill_crossencoder.py reads them): the learn part of NCBI-disease train
// linked with the context model (each occurrence in its own window: more windows; rerank forced on
// the top 5, no pruning, no cache), then KB names in mention form without context, as for
// crossencoder-fast (bench/distill-pairs.ts). Every pair is scored alone by the int8 teacher, as the
// linker scores pairs when pruning; one JSON line per pair: {q, ids, types, logit}. The tune part is
// never read. --span-queries N adds N unannotated mention-like spans of the learn part, each in its
// own window (bench/unannotated-spans.ts; a seeded sample, drawn after the learn mentions and before
// the KB names): the teacher labels them, so the student sees far more queries in context.
//   node --import tsx bench/context-distill-pairs.ts [--kb-queries 4000] [--span-queries 0] [--seed 20261127] [--out FILE] [--index DIR]
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadPubTatorCorpus } from '../src/eval/gold.ts';
import { keepSplitPart } from '../src/eval/offline-eval.ts';
import { TUNING_SPLIT_SEED } from '../src/eval/tuning-split.ts';
import { openLinker } from '../src/link/open-linker.ts';
import { CONTEXT_BENCH_FLAGS, openTuneBench } from './context-bench.ts';
import { lcg, mentionForm } from './kb-mention-form.ts';
import { tapTeacherPairs } from './teacher-pairs.ts';
import { spanVocabulary, unannotatedSpans } from './unannotated-spans.ts';

const { values } = parseArgs({
  options: {
    ...CONTEXT_BENCH_FLAGS,
    teacher: { type: 'string', default: join('models', 'default', 'crossencoder-context') },
    'kb-queries': { type: 'string', default: '4000' },
    'span-queries': { type: 'string', default: '0' },
    seed: { type: 'string', default: '20261127' },
    out: { type: 'string', default: join('models', 'work', 'ctx-distill', 'pairs.jsonl') },
  },
});
const { indexDir } = await openTuneBench(values, 'context-distill-pairs');
const linker = await openLinker({
  indexDir,
  provider: 'cpu',
  rerankerDir: values.teacher,
  calibration: false,
  log: () => {},
  config: { rerank: { prune: false, policy: 'always', candidates: 5, repeatWindow: 'own' }, cache: { maxEntries: 0 }, exactVectors: false },
});
// int8 links each mention alone: one scorer call is one mention's candidates.
let query = 0;
const { out, written } = tapTeacherPairs(linker, values.out, () => query++);
const learn = await loadPubTatorCorpus(values.train);
keepSplitPart(learn, 'learn', TUNING_SPLIT_SEED);
const t0 = performance.now();
for (let i = 0; i < learn.notes.length; i += 8) await linker.linkNotes(learn.notes.slice(i, i + 8));
console.log(`learn part: ${query} queries, ${written()} pairs, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
const { concepts } = linker.index;
const spanQueries = Number(values['span-queries']);
if (spanQueries > 0) {
  const vocabulary = spanVocabulary(learn.notes);
  const spans = learn.notes.flatMap((note) => unannotatedSpans(note, vocabulary, 'Disease').map((mention) => ({ note, mention })));
  // A seeded partial shuffle: the first `spanQueries` are the sample.
  const pick = lcg(Number(values.seed) + 1);
  const n = Math.min(spanQueries, spans.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(pick() * (spans.length - i));
    [spans[i], spans[j]] = [spans[j]!, spans[i]!];
  }
  const byNote = new Map<string, { note: (typeof spans)[number]['note']; mentions: (typeof spans)[number]['mention'][] }>();
  for (const { note, mention } of spans.slice(0, n)) {
    const entry = byNote.get(note.noteId) ?? byNote.set(note.noteId, { note, mentions: [] }).get(note.noteId)!;
    entry.mentions.push(mention);
  }
  const notes = [...byNote.values()].map(({ note, mentions }) => ({ ...note, mentions: mentions.sort((a, b) => a.start - b.start || a.end - b.end) }));
  const before = query;
  for (let i = 0; i < notes.length; i += 4) await linker.linkNotes(notes.slice(i, i + 4));
  console.log(`unannotated spans: ${spans.length} in the learn part, ${n} sampled → ${query - before} queries, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}
const rand = lcg(Number(values.seed));
for (let k = 0; k < Number(values['kb-queries']); k++) {
  const concept = concepts[Math.floor(rand() * concepts.length)]!;
  const names = [concept.name, ...concept.synonyms];
  const text = mentionForm(names[Math.floor(rand() * names.length)]!, rand);
  await linker.linkNotes([{ noteId: `kb${k}`, text, mentions: [{ id: 'm', start: 0, end: text.length, text, label: 'Disease' }] }]);
}
await new Promise((resolve) => out.end(resolve));
console.log(`${query} queries, ${written()} pairs → ${values.out} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
await linker.close();
