// node --import tsx bench/memory-raw-text.bench.ts — does a memory without raw text
// (`memory add --no-raw-text`: keyed surface hashes + vectors, docs/memory.md) link like one with
// raw text? The memory is learned from the `learn` part of NCBI-disease train's fixed tuning split
// and scored on its 100 `tune` documents, as bench/memory.bench.ts scores settings (shipped link
// config, nothing tuned; dev is not touched), with and without the reranker. Also checks that no
// learned mention text is in the no-raw-text memory's files. Writes bench/results/memory-raw-text.json.
//   --reranker DIR|none  --corpus-train FILE  --kb FILE  --out FILE
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readPubTator } from '../src/eval/pubtator.ts';
import { selectSplit } from '../src/eval/tuning-split.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { DEFAULT_RERANKER_DIR } from '../src/link/open-linker.ts';
import { resolveMemoryDir } from '../src/retrieve/memory-root.ts';
import { cli, ensureBenchIndex, portablePaths } from './bench-index.ts';
import { MEDIC_KB_FLAGS, medicKb, requireBenchFiles } from './medic-kb.ts';

const { values } = parseArgs({
  options: {
    ...MEDIC_KB_FLAGS,
    'corpus-train': { type: 'string', default: join('..', 'shared', 'data', 'ncbi-disease', 'NCBItrainset_corpus.txt') },
    reranker: { type: 'string', default: DEFAULT_RERANKER_DIR },
    out: { type: 'string', default: join('bench', 'results', 'memory-raw-text.json') },
  },
});
const medic = medicKb(values);
requireBenchFiles('bench memory-raw-text', [...medic.files, values['corpus-train']]);

const { indexDir } = ensureBenchIndex({ ...medic, modelDir: DEFAULT_MODEL_DIR, log: console.log });
const work = mkdtempSync(join(tmpdir(), 'cuilink-bench-memory-raw-'));
const rerankerPresent = values.reranker !== 'none' && existsSync(join(values.reranker, 'manifest.json'));
try {
  const roots = { raw: join(work, 'raw'), hashed: join(work, 'hashed') };
  const add = ['memory', 'add', '--corpus', values['corpus-train'], '--split', 'learn', '--index', indexDir, '--outside-kb', '--provider', 'cpu'];
  const addOut = { raw: cli([...add, '--memory', roots.raw]).trim(), hashed: cli([...add, '--memory', roots.hashed, '--no-raw-text']).trim() };
  console.log(addOut.raw);
  console.log(addOut.hashed);

  // No learned surface (at least 4 characters: shorter ones turn up inside hex by chance) in any file of the hashed memory.
  const docs = [];
  for await (const doc of readPubTator(values['corpus-train'])) docs.push(doc);
  const surfaces = new Set(selectSplit(docs, (d) => d.pmid, 'learn').flatMap((d) => d.annotations.map((a) => a.text)).filter((t) => t.length >= 4));
  const { dir: hashedDir } = resolveMemoryDir(roots.hashed);
  const files = readdirSync(hashedDir).map((f) => readFileSync(join(hashedDir, f)).toString('latin1'));
  const found = [...surfaces].filter((s) => files.some((body) => body.includes(s)));
  const rawRecords = readFileSync(join(resolveMemoryDir(roots.raw).dir, 'records.jsonl'), 'utf8');
  const foundInRaw = [...surfaces].filter((s) => rawRecords.includes(s)).length;
  console.log(`learned surfaces (≥ 4 chars): ${surfaces.size}; in the raw memory's records: ${foundInRaw}; in the no-raw-text memory's files: ${found.length}${found.length ? ` (${found.slice(0, 5).join(', ')})` : ''}`);

  const rows = [];
  for (const reranker of ['none', ...(rerankerPresent ? [values.reranker] : [])]) {
    const result: Record<string, { acc1: number; acc5: number; mrr: number; n: number }> = {};
    const predicted: Record<string, Map<string, string>> = {};
    for (const mode of ['raw', 'hashed'] as const) {
      const out = join(work, `eval-${mode}-${reranker === 'none' ? 'none' : 'rr'}.json`);
      const predictions = `${out}.predictions.jsonl`;
      cli(['eval', '--index', indexDir, '--corpus', values['corpus-train'], '--split', 'tune', '--reranker', reranker, '--provider', 'cpu', '--memory', roots[mode], '--out', out, '--predictions', predictions]);
      const report = JSON.parse(readFileSync(out, 'utf8')) as { metrics: { overall: { acc1: number; acc5: number; mrr: number; n: number } } };
      const lines = readFileSync(predictions, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { noteId: string; mentionId: string; predicted: string[] });
      predicted[mode] = new Map(lines.map((l) => [`${l.noteId}\u0000${l.mentionId}`, JSON.stringify(l.predicted)]));
      const { acc1, acc5, mrr, n } = report.metrics.overall;
      result[mode] = { acc1, acc5, mrr, n };
    }
    const differing = [...predicted.raw!].filter(([k, v]) => predicted.hashed!.get(k) !== v).length;
    const row = { reranker: reranker === 'none' ? 'none' : 'default', raw: result.raw!, noRawText: result.hashed!, mentionsWithDifferentRanking: differing };
    rows.push(row);
    console.log(`reranker ${row.reranker.padEnd(7)} tune acc@1 raw ${row.raw.acc1.toFixed(4)}  no-raw-text ${row.noRawText.acc1.toFixed(4)}  (n ${row.raw.n}; ${differing} mention(s) ranked differently)`);
  }
  mkdirSync(join(values.out, '..'), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify({
    benchmark: 'memory-raw-text', date: new Date().toISOString(), machine: { cpus: cpus().length, model: cpus()[0]?.model },
    train: values['corpus-train'], index: indexDir, reranker: rerankerPresent ? portablePaths(values.reranker) : null,
    protocol: 'memory from the learn part of the NCBI-disease train tuning split (seed 20261123), scored on its 100 tune documents with the shipped link config; raw-text memory vs --no-raw-text memory; nothing tuned, dev not used',
    memoryAdd: { raw: portablePaths(addOut.raw, work), hashed: portablePaths(addOut.hashed, work) }, leak: { learnedSurfacesAtLeast4Chars: surfaces.size, inRawRecords: foundInRaw, inNoRawTextFiles: found.length }, rows,
  }, null, 2)}\n`);
  console.log(`wrote ${values.out}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
