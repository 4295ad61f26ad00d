// node --import tsx bench/memory-scale.bench.ts — a memory of 100k labelled mentions: add
// throughput, snapshot size, load time, and NCBI-disease dev linking throughput with that memory
// next to without (same process, alternating rounds, medians). The labels are synthesized from
// MEDIC: every name and synonym of the index labelled with its concept, then NCBI train mentions
// repeated up to the target; the vectors are the index's own name vectors (the bi-encoder's
// mention-mode encoding of those strings), so the add time is the memory's, not the encoder's
// (encoding throughput: `cuilink memory add`, printed by bench:memory). Writes
// bench/results/memory-scale.json. No setting is chosen here (defaults from the train tuning split).
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadPubTatorCorpus } from '../src/eval/gold.ts';
import { evaluateCorpus } from '../src/eval/offline-eval.ts';
import { kbOntologyView, loadIndexKb } from '../src/eval/kb-ontology-view.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { openLinker } from '../src/link/open-linker.ts';
import { LinkIndex } from '../src/retrieve/link-index.ts';
import { MemoryStore } from '../src/retrieve/memory-store.ts';
import { activateMemoryVersion } from '../src/retrieve/memory-root.ts';
import type { NewMemoryRecord } from '../src/retrieve/memory-record.ts';
import { normalizeName } from '../src/text/normalize.ts';
import { ensureBenchIndex } from './bench-index.ts';
import { MEDIC_KB, MEDIC_SUPPLEMENT, MEDIC_XREF_NAMES } from './medic-kb.ts';

const SHARED = join('..', 'shared', 'data');
const { values } = parseArgs({ options: { size: { type: 'string', default: '100000' }, rounds: { type: 'string', default: '3' }, reranker: { type: 'string', default: 'none' }, out: { type: 'string', default: join('bench', 'results', 'memory-scale.json') } } });
const size = Number(values.size);
const { indexDir } = ensureBenchIndex({ kb: MEDIC_KB, supplements: [MEDIC_SUPPLEMENT], xrefNames: MEDIC_XREF_NAMES, modelDir: DEFAULT_MODEL_DIR, log: console.log });
const index = await LinkIndex.open(indexDir, normalizeName);
const records: NewMemoryRecord[] = [];
const vectors: Float32Array[] = [];
for (let label = 0; records.length < size; label = (label + 1) % index.names.size) {
  const concept = index.concepts[index.names.conceptIndexOf[label]!]!;
  records.push({ text: index.names.names[label]!, label: 'Disease', ids: [concept.id], source: records.length < index.names.size ? 'synthetic:medic-names' : 'synthetic:medic-names-repeated', time: 1 });
  vectors.push(index.hnsw.vector(label));
}
const work = mkdtempSync(join(tmpdir(), 'cuilink-memory-scale-'));
try {
  const store = MemoryStore.empty({ id: index.manifest.model.id, sha256: index.manifest.model.sha256, dims: index.manifest.model.dims }, normalizeName);
  let t = performance.now();
  store.add(records, vectors);
  const addSeconds = (performance.now() - t) / 1000;
  t = performance.now();
  const manifest = store.save(join(work, 'mem'));
  activateMemoryVersion(join(work, 'mem'), manifest.memoryVersion);
  const saveSeconds = (performance.now() - t) / 1000;
  const dir = join(work, 'mem', manifest.memoryVersion);
  const bytes = Object.fromEntries(readdirSync(dir).map((f) => [f, statSync(join(dir, f)).size]));
  t = performance.now();
  const loaded = MemoryStore.open(dir, normalizeName);
  const loadSeconds = (performance.now() - t) / 1000;
  console.log(`${loaded.size} records: add ${addSeconds.toFixed(1)} s (${(size / addSeconds).toFixed(0)}/s), save ${saveSeconds.toFixed(1)} s, load ${loadSeconds.toFixed(1)} s, snapshot ${(Object.values(bytes).reduce((a, b) => a + b, 0) / 2 ** 20).toFixed(1)} MiB`);

  const corpus = await loadPubTatorCorpus(join(SHARED, 'ncbi-disease', 'NCBIdevelopset_corpus.txt'));
  const view = kbOntologyView(await loadIndexKb(indexDir));
  const reranker = values.reranker === 'none' ? false : values.reranker;
  const cores = { without: await openLinker({ indexDir, rerankerDir: reranker, provider: 'cpu' }), with: await openLinker({ indexDir, rerankerDir: reranker, provider: 'cpu', memoryDir: join(work, 'mem'), memoryPollMs: 0 }) };
  const rates: Record<'without' | 'with', number[]> = { without: [], with: [] };
  const acc: Record<string, number | null> = {};
  for (const core of Object.values(cores)) await core.linkNotes(corpus.notes.slice(0, 4));
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const key of round % 2 === 0 ? (['without', 'with'] as const) : (['with', 'without'] as const)) {
      const r = await evaluateCorpus(cores[key], corpus, view, { batchSize: 32 });
      rates[key].push(r.mentionsPerSecond);
      acc[key] = r.metrics.overall.acc1;
    }
  }
  for (const core of Object.values(cores)) await core.close();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const ratio = median(rates.with) / median(rates.without);
  console.log(`dev linking (${values.reranker === 'none' ? 'no reranker' : 'reranker'}): ${median(rates.without).toFixed(0)} mentions/s without, ${median(rates.with).toFixed(0)} with the ${size}-label memory (ratio ${ratio.toFixed(3)}; acc@1 ${acc.without} → ${acc.with})`);
  mkdirSync(join(values.out, '..'), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify({
    benchmark: 'memory-scale', date: new Date().toISOString(), machine: { cpus: cpus().length, model: cpus()[0]?.model, note: 'shared 2-core machine; ratios within one process are the figure, absolute rates are noisy' },
    settingsChosenOn: 'defaults of the link config memory block, chosen on the NCBI-disease train tuning split (bench:memory)', index: indexDir,
    records: loaded.size, synthesizedFrom: 'MEDIC names and synonyms of the bench index (each labelled with its concept), repeated to the target size; vectors = the index name vectors',
    addSeconds, addPerSecond: size / addSeconds, saveSeconds, loadSeconds, snapshotBytes: bytes,
    linking: { reranker: values.reranker, mentionsPerSecondWithout: rates.without, mentionsPerSecondWith: rates.with, medianRatio: ratio, acc1Without: acc.without, acc1With: acc.with },
  }, null, 2)}\n`);
  console.log(`wrote ${values.out}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
