// npm run bench:active — label efficiency of the learn stream's selection policies (issue #25).
// NCBI-disease train's `learn` part is replayed in note order as a stream: linked once by the
// default linker (no memory), then for each policy and budget the LabelSelector
// (src/stream/label-selection) picks mentions window by window, a memory is built from the chosen
// labels only, and the default linker with that memory is scored on the `tune` part (every policy
// weight is chosen there) and, once per change, on dev. Writes bench/results/active-learning.json
// and active-learning.svg.
//   --budgets 100,250,500,1000,2000  --windows 10  --exponents 0.5,1,2  --no-dev  --out FILE
//   --calibration FILE  (the shipped calibration is fit on the learn part this bench replays: pass one
//   fit on the tune part, cuilink calibrate --split tune, so that selection reads held-out confidence)
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { BiEncoder } from '../src/encode/bi-encoder.ts';
import { loadPubTatorCorpus, mentionKey, type GoldCorpus } from '../src/eval/gold.ts';
import { kbOntologyView, loadIndexKb } from '../src/eval/kb-ontology-view.ts';
import { evaluateCorpus, keepSplitPart } from '../src/eval/offline-eval.ts';
import { TUNING_SPLIT_SEED } from '../src/eval/tuning-split.ts';
import { readIndexManifest } from '../src/retrieve/index-manifest.ts';
import { DEFAULT_MODEL_DIR } from '../src/link/default-index.ts';
import { MemoryLearner, publishMemory, type LabelledMention } from '../src/link/memory-learner.ts';
import { openLinker } from '../src/link/open-linker.ts';
import type { LinkedNote } from '../src/link/types.ts';
import { normalizeName } from '../src/text/normalize.ts';
import { SELECTION_POLICIES, type SelectionPolicy } from '../src/stream/label-selection/selection-policy.ts';
import { ensureBenchIndex } from './bench-index.ts';
import { labelCurveSvg, type Curve } from './label-curve-svg.ts';
import { replaySelection } from './label-replay.ts';
import { MEDIC_KB_FLAGS, medicKb, requireBenchFiles } from './medic-kb.ts';

const SHARED = join('..', 'shared', 'data');
const { values } = parseArgs({
  options: {
    ...MEDIC_KB_FLAGS,
    'corpus-train': { type: 'string', default: join(SHARED, 'ncbi-disease', 'NCBItrainset_corpus.txt') },
    'corpus-dev': { type: 'string', default: join(SHARED, 'ncbi-disease', 'NCBIdevelopset_corpus.txt') },
    budgets: { type: 'string', default: '100,250,500,1000,2000' },
    windows: { type: 'string', default: '10' },
    exponents: { type: 'string', default: '0.5,1,2' },
    'no-dev': { type: 'boolean', default: false },
    calibration: { type: 'string' },
    out: { type: 'string', default: join('bench', 'results', 'active-learning.json') },
  },
});
const medic = medicKb(values);
requireBenchFiles('bench:active', [...medic.files, values['corpus-train'], values['corpus-dev']]);
const budgets = values.budgets.split(',').map(Number);
const windows = Number(values.windows);
const exponents = values.exponents.split(',').map(Number);

const { indexDir } = ensureBenchIndex({ ...medic, modelDir: DEFAULT_MODEL_DIR, log: console.log });
const view = kbOntologyView(await loadIndexKb(indexDir));
const loadSplit = async (part: 'learn' | 'tune'): Promise<GoldCorpus> => {
  const corpus = await loadPubTatorCorpus(values['corpus-train']);
  keepSplitPart(corpus, part, TUNING_SPLIT_SEED);
  return corpus;
};
const learn = await loadSplit('learn');
const tune = await loadSplit('tune');
const dev = await loadPubTatorCorpus(values['corpus-dev']);
const work = mkdtempSync(join(tmpdir(), 'cuilink-bench-active-'));

try {
  // 1. The learn stream as the stage would link it, once: default linker, no memory.
  const base = await openLinker({ indexDir, provider: 'cpu', calibration: values.calibration });
  const linked: LinkedNote[] = [];
  try {
    for (let i = 0; i < learn.notes.length; i += 32) linked.push(...(await base.linkNotes(learn.notes.slice(i, i + 32))));
  } finally {
    await base.close();
  }
  const learnMentions = learn.notes.reduce((n, note) => n + note.mentions.length, 0);
  console.log(`learn stream: ${learn.notes.length} notes, ${learnMentions} mentions, ${new Set(learn.notes.flatMap((n) => n.mentions.map((m) => normalizeName(m.text)))).size} distinct surfaces`);

  // 2. Every learn mention's memory prototype, encoded once (a label's vector does not depend on who chose it).
  const encoder = await BiEncoder.open(readIndexManifest(indexDir).model.path, { provider: 'cpu' });
  const learner = new MemoryLearner(encoder);
  const labelled = new Map<string, LabelledMention>();
  for (const note of learn.notes) {
    for (const m of note.mentions) {
      const gold = learn.gold.get(mentionKey(note.noteId, m.id))!;
      labelled.set(mentionKey(note.noteId, m.id), { record: { text: m.text, label: m.label, ids: gold.ids, source: 'bench:active', time: 0, noteId: note.noteId, mentionId: m.id }, note: { text: note.text, start: m.start, end: m.end } });
    }
  }

  const score = async (memoryRoot: string | undefined, corpus: GoldCorpus) => {
    const core = await openLinker({ indexDir, provider: 'cpu', calibration: values.calibration, memoryDir: memoryRoot, memoryPollMs: 0, log: () => {} });
    try {
      const { acc1, acc5, mrr } = (await evaluateCorpus(core, corpus, view, { batchSize: 32 })).metrics.overall;
      return { acc1: acc1 ?? 0, acc5: acc5 ?? 0, mrr: mrr ?? 0 };
    } finally {
      await core.close();
    }
  };
  const buildMemory = async (keys: readonly string[], name: string): Promise<string> => {
    const root = join(work, name);
    const store = learner.openOrCreate(root);
    await learner.add(store, keys.map((k) => labelled.get(k)!));
    publishMemory(store, root);
    return root;
  };

  // 3. Tune: every policy (and α of confidence-recurrence) at every budget.
  const baselineTune = await score(undefined, tune);
  console.log(`no labels: tune acc@1 ${baselineTune.acc1.toFixed(4)}`);
  type Variant = { policy: SelectionPolicy; exponent: number; name: string };
  const variants: Variant[] = SELECTION_POLICIES.flatMap((policy): Variant[] => (policy === 'confidence-recurrence' ? exponents.map((exponent) => ({ policy, exponent, name: `${policy} α=${exponent}` })) : [{ policy, exponent: 0, name: policy }]));
  const rows: { variant: string; policy: SelectionPolicy; exponent: number; budget: number; labels: number; surfaces: number; memoryRoot: string; tune: { acc1: number; acc5: number; mrr: number }; dev?: { acc1: number; acc5: number; mrr: number } }[] = [];
  for (const variant of variants) {
    for (const budget of budgets) {
      const chosen = replaySelection({ notes: learn.notes, linked, policy: variant.policy, recurrenceExponent: variant.exponent, budget, windows });
      const root = await buildMemory(chosen, `${variant.name.replace(/[^a-z0-9]+/gi, '-')}-${budget}`);
      const metrics = await score(root, tune);
      const surfaces = new Set(chosen.map((k) => normalizeName(labelled.get(k)!.record.text))).size;
      rows.push({ variant: variant.name, policy: variant.policy, exponent: variant.exponent, budget, labels: chosen.length, surfaces, memoryRoot: root, tune: metrics });
      console.log(`${variant.name.padEnd(28)} budget ${String(budget).padStart(4)}: ${chosen.length} labels (${surfaces} surfaces) → tune acc@1 ${metrics.acc1.toFixed(4)}`);
    }
  }
  await encoder.close();

  // 4. The choice, on tune only: the best mean tune acc@1 over the budgets; a variant within the
  // index-rebuild noise of the best (≤ 4 tune mentions) is no worse, so the simplest such one
  // (declared order: random ones, confidence, then confidence-recurrence by α) is chosen.
  const meanTune = (name: string) => rows.filter((r) => r.variant === name).reduce((s, r) => s + r.tune.acc1, 0) / budgets.length;
  const tuneMentions = tune.gold.size;
  const bestMean = Math.max(...variants.map((v) => meanTune(v.name)));
  const chosenVariant = variants.find((v) => (bestMean - meanTune(v.name)) * tuneMentions <= 4 + 1e-9)!;
  console.log(`chosen on tune: ${chosenVariant.name} (mean tune acc@1 ${meanTune(chosenVariant.name).toFixed(4)}; best ${bestMean.toFixed(4)}; noise 4/${tuneMentions})`);

  // 5. Dev once: each policy at its tune-chosen setting (α for confidence-recurrence), every budget.
  // confidence-recurrence at its tune-best α (the config default), whichever policy was chosen.
  const bestRecurrence = variants.filter((v) => v.policy === 'confidence-recurrence').sort((a, b) => meanTune(b.name) - meanTune(a.name))[0];
  const reported = variants.filter((v) => v.policy !== 'confidence-recurrence' || v === bestRecurrence);
  let baselineDev: { acc1: number; acc5: number; mrr: number } | undefined;
  if (!values['no-dev']) {
    baselineDev = await score(undefined, dev);
    console.log(`no labels: dev acc@1 ${baselineDev.acc1.toFixed(4)}`);
    for (const r of rows) {
      if (!reported.some((v) => v.name === r.variant)) continue;
      r.dev = await score(r.memoryRoot, dev);
      console.log(`${r.variant.padEnd(28)} budget ${String(r.budget).padStart(4)} → dev acc@1 ${r.dev.acc1.toFixed(4)}`);
    }
  }

  // 6. Labels to reach X: for each accuracy random-note reaches at a budget, the fewest labels each policy needs.
  const labelsToReach = (split: 'tune' | 'dev') => {
    const ofVariant = (name: string) => rows.filter((r) => r.variant === name && r[split] !== undefined).sort((a, b) => a.budget - b.budget);
    return ofVariant('random-note').map((target) => ({
      target: `random-note at ${target.budget}`,
      acc1: target[split]!.acc1,
      labels: Object.fromEntries(reported.map((v) => [v.name, ofVariant(v.name).find((r) => r[split]!.acc1 >= target[split]!.acc1 - 1e-12)?.budget ?? null])),
    }));
  };
  const curves = (split: 'tune' | 'dev'): Curve[] =>
    reported.map((v) => ({ name: v.name, points: rows.filter((r) => r.variant === v.name && r[split] !== undefined).map((r) => ({ x: r.budget, y: r[split]!.acc1 })) }));
  const table = { tune: labelsToReach('tune'), dev: values['no-dev'] ? null : labelsToReach('dev') };
  const devAt = (name: string, budget: number) => rows.find((r) => r.variant === name && r.budget === budget)?.dev?.acc1;
  const bar = values['no-dev'] ? null : { rule: 'the chosen policy at 500 labels ≥ random-note at 2000 labels, on dev', chosen500: devAt(chosenVariant.name, 500) ?? null, randomNote2000: devAt('random-note', 2000) ?? null, met: (devAt(chosenVariant.name, 500) ?? -1) >= (devAt('random-note', 2000) ?? Infinity) };
  if (bar) console.log(`bar: ${bar.rule}: ${bar.chosen500?.toFixed(4)} vs ${bar.randomNote2000?.toFixed(4)} → ${bar.met ? 'MET' : 'NOT MET'}`);
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify({
    benchmark: 'bench:active', date: new Date().toISOString(), machine: { cpus: cpus().length, model: cpus()[0]?.model },
    protocol: `NCBI-disease train learn part (tuning split seed ${TUNING_SPLIT_SEED}) replayed in note order, linked once by the default linker without memory; ${windows} equal windows of notes, budget/${windows} labels chosen at each window's end (unchosen candidates wait for the next window); memory from the chosen labels only; default linker + that memory scored on the tune part (choice) and dev (report)`,
    calibration: values.calibration === undefined ? 'shipped' : (JSON.parse(readFileSync(values.calibration, 'utf8')) as { version?: string }).version ?? 'given file', kb: values.kb, kbSupplements: medic.supplements, kbXrefNames: medic.xrefNames, index: indexDir, learn: { notes: learn.notes.length, mentions: learnMentions },
    baseline: { tune: baselineTune, dev: baselineDev ?? null }, chosenOnTune: chosenVariant.name, recurrenceExponentOnTune: bestRecurrence?.exponent ?? null, meanTuneAcc1: Object.fromEntries(variants.map((v) => [v.name, meanTune(v.name)])), choiceRule: 'best mean tune acc@1 over the budgets; the simplest variant within 4 tune mentions of it', rows: rows.map(({ memoryRoot: _root, ...r }) => r), labelsToReach: table, bar,
  }, null, 2)}\n`);
  const svgFile = values.out.replace(/\.json$/, '.svg');
  writeFileSync(svgFile, labelCurveSvg([{ title: 'tune (choice)', curves: curves('tune'), baseline: baselineTune.acc1 }, ...(baselineDev ? [{ title: 'dev (report)', curves: curves('dev'), baseline: baselineDev.acc1 }] : [])]));
  console.log(`wrote ${values.out} and ${svgFile}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
