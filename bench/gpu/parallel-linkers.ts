// How many mentions/s one machine links when several linker processes share its GPU: each
// process is one Node main thread (retrieval, rules, calibration run there), so one process
// leaves a GPU and most cores idle. N processes open the same index and models, wait until all
// are ready, then link the same first-pass stream (NCBI-disease train + dev, cold cache) at once;
// the machine's rate is all their mentions over the span from the first start to the last end.
// Before that, one process links the stream with the default and uncached settings and counts
// the top-1 concepts that differ (fp16 rows depend on the batch they share, bench/first-pass.ts).
//   node --import tsx bench/gpu/parallel-linkers.ts --index DIR --train FILE --corpus FILE
//     [--provider cuda] [--processes 1,4,8] [--notes N] [--out FILE]
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { loadPubTatorCorpus } from '../../src/eval/gold.ts';
import { kbOntologyView, loadIndexKb } from '../../src/eval/kb-ontology-view.ts';
import { parseProviderChoice } from '../../src/encode/execution-provider.ts';
import { openLinker } from '../../src/link/open-linker.ts';
import type { NoteInput } from '../../src/link/types.ts';
import { DEFAULT_MODEL_DIR } from '../../src/link/default-index.ts';
import { DEFAULT_RERANKER_DIR } from '../../src/link/open-linker.ts';
import { runFirstPass, UNCACHED } from '../first-pass.ts';

const { values } = parseArgs({
  options: {
    index: { type: 'string' },
    train: { type: 'string' },
    corpus: { type: 'string' },
    provider: { type: 'string', default: 'cuda' },
    processes: { type: 'string', default: '1,4,8' },
    notes: { type: 'string' },
    out: { type: 'string' },
    child: { type: 'boolean', default: false },
  },
});
if (!values.index || !values.train || !values.corpus) {
  console.error('parallel-linkers: --index, --train and --corpus are required');
  process.exit(2);
}
const provider = parseProviderChoice(values.provider);
const open = { indexDir: values.index, modelDir: DEFAULT_MODEL_DIR, rerankerDir: DEFAULT_RERANKER_DIR, provider };

async function stream(): Promise<{ notes: NoteInput[]; train: Awaited<ReturnType<typeof loadPubTatorCorpus>>; dev: Awaited<ReturnType<typeof loadPubTatorCorpus>> }> {
  const train = await loadPubTatorCorpus(values.train!);
  const dev = await loadPubTatorCorpus(values.corpus!);
  const all = [...train.notes, ...dev.notes];
  return { notes: values.notes ? all.slice(0, Number(values.notes)) : all, train, dev };
}

if (values.child) {
  const { notes } = await stream();
  const linker = await openLinker({ ...open, log: () => {} });
  await linker.linkNotes(notes.slice(0, 1));
  linker.invalidateCache();
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once('line', () => resolve()));
  const startMs = performance.timeOrigin + performance.now();
  let mentions = 0;
  for (let i = 0; i < notes.length; i += 32) {
    for (const note of await linker.linkNotes(notes.slice(i, i + 32))) mentions += note.mentions.length;
  }
  const endMs = performance.timeOrigin + performance.now();
  await linker.close();
  process.stdout.write(`${JSON.stringify({ mentions, startMs, endMs })}\n`);
  process.exit(0);
}

interface ChildResult { mentions: number; startMs: number; endMs: number }

async function runProcesses(n: number): Promise<{ processes: number; mentions: number; seconds: number; mentionsPerSecond: number; perProcess: number[]; loadavg1AtEnd: number }> {
  const children = Array.from({ length: n }, () => spawn(process.execPath, ['--import', 'tsx', ...process.argv.slice(1), '--child'], { stdio: ['pipe', 'pipe', 'inherit'] }));
  const lines = children.map((child) => createInterface({ input: child.stdout! })[Symbol.asyncIterator]());
  const next = async (i: number) => {
    const line = await lines[i]!.next();
    if (line.done) throw new Error(`linker process ${i} ended early (exit ${children[i]!.exitCode})`);
    return line.value;
  };
  await Promise.all(children.map((_, i) => next(i)));
  for (const child of children) child.stdin!.write('go\n');
  const results = (await Promise.all(children.map((_, i) => next(i)))).map((line) => JSON.parse(line) as ChildResult);
  const mentions = results.reduce((sum, r) => sum + r.mentions, 0);
  const seconds = (Math.max(...results.map((r) => r.endMs)) - Math.min(...results.map((r) => r.startMs))) / 1000;
  return { processes: n, mentions, seconds, mentionsPerSecond: mentions / seconds, perProcess: results.map((r) => r.mentions / ((r.endMs - r.startMs) / 1000)), loadavg1AtEnd: loadavg()[0]! };
}

const { train, dev } = await stream();
const view = kbOntologyView(await loadIndexKb(values.index));
const compared = await runFirstPass({ open, train, dev, view, rounds: 1, settings: [UNCACHED, { name: 'default', config: {} }], log: () => {} });
const byDefault = compared.results[1]!;
console.log(`default against uncached, one process: ${byDefault.top1ConceptDiffersFromUncached} top-1 concepts differ (${byDefault.top1DiffersFromUncached} concept or score) of ${compared.stream.mentions}; dev acc@1 ${byDefault.devAcc1?.toFixed(3)} vs ${compared.results[0]!.devAcc1?.toFixed(3)}; ${byDefault.medianMentionsPerSecond.toFixed(0)} mentions/s`);
const runs = [];
for (const n of values.processes.split(',').map(Number)) {
  const run = await runProcesses(n);
  runs.push(run);
  console.log(`${n} process(es): ${run.mentionsPerSecond.toFixed(0)} mentions/s together (${run.mentions} mentions in ${run.seconds.toFixed(1)} s), each ${run.perProcess.map((r) => r.toFixed(0)).join(' ')}; load ${run.loadavg1AtEnd.toFixed(1)}`);
}
const result = { benchmark: 'bench/gpu/parallel-linkers.ts', provider, date: new Date().toISOString(), machine: { cpus: cpus().length, model: cpus()[0]?.model }, defaultAgainstUncached: byDefault, stream: compared.stream, runs };
if (values.out) writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
