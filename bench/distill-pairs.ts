// Training data for a distilled cross-encoder (models/cuilink_models/distill_crossencoder.py):
// KB names in mention form (the ontology alone, no corpus text), each linked by the shipped
// pipeline with reranking forced on its top 5, every (query, candidate) pair scored alone by the
// shipped int8 cross-encoder, as the linker scores pairs when pruning — so the student learns the
// scorer exactly as the linker runs it. The pairs are read at the linker's own cross-encoder, so
// the queries are the ones the linker builds (in-mention abbreviations expanded, markers).
// One JSON line per pair: {q: query number, ids, types: token and segment ids, logit}.
//   node --import tsx bench/distill-pairs.ts [--queries 24000] [--seed 20261125] [--out FILE] [--index DIR]
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openLinker } from '../src/link/open-linker.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { ensureBenchIndex } from './bench-index.ts';
import { lcg, mentionForm } from './kb-mention-form.ts';
import { tapTeacherPairs } from './teacher-pairs.ts';
import { MEDIC_KB_FLAGS, medicKb } from './medic-kb.ts';

const { values } = parseArgs({
  options: {
    ...MEDIC_KB_FLAGS,
    // The shipped student's pairs were drawn from MEDIC 2017 alone (no supplement, no xref names): kept, so that they reproduce.
    'kb-supplement': { type: 'string', default: 'none' },
    'xref-names': { type: 'string', default: 'none' },
    index: { type: 'string' },
    queries: { type: 'string', default: '24000' },
    seed: { type: 'string', default: '20261125' },
    out: { type: 'string', default: join('models', 'work', 'distill', 'pairs.jsonl') },
  },
});
const medic = medicKb(values);
const { indexDir } = ensureBenchIndex({ ...medic, modelDir: DEFAULT_MODEL_DIR, indexDir: values.index, rebuild: false, provider: 'cpu', log: console.log });
const rand = lcg(Number(values.seed));
const linker = await openLinker({
  indexDir,
  provider: 'cpu',
  config: { rerank: { prune: false, policy: 'always', candidates: 5 }, cache: { maxEntries: 0 }, exactVectors: false },
  log: () => {},
});
let query = 0;
const { out, written } = tapTeacherPairs(linker, values.out, () => query);
const queries = Number(values.queries);
const { concepts } = linker.index;
const t0 = performance.now();
for (; query < queries; query++) {
  const concept = concepts[Math.floor(rand() * concepts.length)]!;
  const names = [concept.name, ...concept.synonyms];
  const text = mentionForm(names[Math.floor(rand() * names.length)]!, rand);
  await linker.linkNotes([{ noteId: `q${query}`, text, mentions: [{ id: 'm', start: 0, end: text.length, text, label: 'Disease' }] }]);
  if (query % 2000 === 0) console.log(`${query} queries, ${written()} pairs, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}
await new Promise((resolve) => out.end(resolve));
console.log(`${queries} queries, ${written()} pairs → ${values.out} in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
await linker.close();
