// A student of the context cross-encoder (bench/context-distill-pairs.ts, then
// cuilink_models.distill_crossencoder --export DIR) against its teacher and the default on the tune
// split (first-window linking, no calibration), and with --first-pass the link cache's first pass.
// Prints only: bench/results/context-student-record.txt holds what it printed.
//   node --import tsx bench/context-student.ts --student DIR [--first-pass] [--index DIR]
import { join } from 'node:path';
import { evaluateCorpus, type OfflineEvalResult } from '../src/eval/offline-eval.ts';
import { openLinker } from '../src/link/open-linker.ts';
import { acc1Versus, CONTEXT_BENCH_FLAGS, contextFirstPass, openTuneBench } from './context-bench.ts';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { ...CONTEXT_BENCH_FLAGS, student: { type: 'string', default: join('models', 'work', 'ctx-distill', 'export') }, teacher: { type: 'string', default: join('models', 'default', 'crossencoder-context') } } });
const { indexDir, view, tune } = await openTuneBench(values, 'ctx-student');
async function run(rerankerDir: string | undefined): Promise<OfflineEvalResult> {
  const core = await openLinker({ indexDir, provider: 'cpu', calibration: false, log: () => {}, ...(rerankerDir ? { rerankerDir } : {}) });
  try {
    const r = await evaluateCorpus(core, tune, view, { batchSize: 32 });
    console.log(`${rerankerDir ?? 'default'}: acc@1 ${r.metrics.overall.acc1?.toFixed(4)} acc@5 ${r.metrics.overall.acc5?.toFixed(4)}`);
    return r;
  } finally {
    await core.close();
  }
}
const base = await run(undefined);
const teacher = await run(values.teacher);
const student = await run(values.student);
console.log('student vs teacher', JSON.stringify(acc1Versus(teacher, student)));
console.log('student vs default', JSON.stringify(acc1Versus(base, student)));
if (values['first-pass']) {
  const fp = await contextFirstPass(values, indexDir, view, [
    { name: 'context teacher', config: {}, rerankerDir: values.teacher },
    { name: 'context student', config: {}, rerankerDir: values.student },
  ]);
  console.log(JSON.stringify(fp, null, 1));
}
