import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag, parseTypesFlag, requireString } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import type { LinkingCore } from '../../link/types.ts';
import { buildEvalReport } from '../../eval/eval-report.ts';
import { loadPubTatorCorpus, mentionKey } from '../../eval/gold.ts';
import { kbOntologyView, loadIndexKb } from '../../eval/kb-ontology-view.ts';
import { collectMisses, summarizeMisses } from '../../eval/error-report.ts';
import { Hierarchy } from '../../kb/hierarchy.ts';
import { evaluateCorpus } from '../../eval/offline-eval.ts';
import { writePredictions } from '../../eval/prediction-file.ts';
import { formatMetricsTable } from '../../eval/report-format.ts';
import { BuildProgress } from '../../retrieve/build-progress.ts';
import { TUNING_SPLIT_SEED, TUNING_SPLIT_SIZE, parseSplitPart } from '../../eval/tuning-split.ts';
import { confidencePoints, keepSplitPart } from '../../eval/offline-eval.ts';
import { summarizeConfidence } from '../../eval/confidence/selective-metrics.ts';
import { formatCalibrationTest, formatConfidence } from '../../eval/confidence/confidence-format.ts';
import { reliabilitySvg } from '../../eval/confidence/reliability-svg.ts';
import { formatStageTable, stageBreakdown } from '../../eval/confidence/stage-breakdown.ts';
import { NON_ENTITY_EVAL_SEED, formatNonEntity, nonEntityReport, withNonEntitySpans, type NonEntityReport } from '../../eval/confidence/non-entity-spans.ts';
import { HOLD_OUT_SEED, formatHoldOut, holdOutConcepts, holdOutReport, pooledHoldOutReport, type HoldOutReport } from '../../eval/confidence/held-out-concepts.ts';
import type { OpenLinkerOptions } from '../../link/open-linker.ts';
import { LINKER_FLAG_OPTIONS, LINKER_FLAGS_HELP, linkerRequest, requireIndexFlag, requireMemory } from '../linker-flags.ts';
import { checkWritable, writeOutput } from '../output-files.ts';

/** Draws one `eval --hold-out-seed` links the corpus for (each is a full linking pass). */
const MAX_HOLD_OUT_SEEDS = 32;

/** `N`, `A-B` or `N,M,…`: distinct integer seeds, in the order given, at most MAX_HOLD_OUT_SEEDS. */
export function parseSeeds(text: string | undefined, flag: string, fallback: number): number[] {
  if (text === undefined) return [fallback];
  const bad = () => new InputError(`--${flag}: an integer, A-B or N,M,… (at most ${MAX_HOLD_OUT_SEEDS} seeds), not '${text}'`, 'BAD_FLAGS');
  const range = /^(-?\d+)-(-?\d+)$/.exec(text.trim());
  let seeds: number[];
  if (range) {
    const [from, to] = [Number(range[1]), Number(range[2])];
    if (to < from || to - from + 1 > MAX_HOLD_OUT_SEEDS) throw bad();
    seeds = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  } else {
    const parts = text.split(',').map((p) => p.trim());
    if (parts.some((p) => !/^-?\d+$/.test(p))) throw bad();
    seeds = parts.map(Number);
  }
  if (seeds.length === 0 || seeds.length > MAX_HOLD_OUT_SEEDS || new Set(seeds).size !== seeds.length || seeds.some((n) => !Number.isSafeInteger(n))) throw bad();
  return seeds;
}

const usage = `Usage: cuilink eval --index DIR --corpus FILE.PubTator [options]

Links every annotated mention of a PubTator corpus (title + ' ' + abstract, annotations as
given; the protocol of shared/data/README.md) through the index and reports, overall and per
NER type: n, acc@1, acc@5, MRR, NIL rate, NIL precision/recall (gold NIL = gold id not in the
KB), ontology similarity 1/(1+d), graded nDCG@5, expected calibration error (ECE: of the links
with a calibrated confidence only; — without a calibration), and mentions/s. With a calibration,
a line on the confidence (AUROC, precision at coverage, ECE beside the ECE a calibrated confidence
would read) and the analytic calibration test's χ² and p (docs/evaluator.md).

nDCG@5 is graded (gold 3, parent/child 2, grandparent/grandchild/sibling 1) against the KB's ideal
list for the gold, so it reads lower than acc@1: a correct top-1 followed by unrelated candidates
is not a perfect list (docs/evaluator.md).

Options:
  --index DIR            index directory (cuilink index build); its concepts are the KB. Required
                         (no default): without it, eval names the default HPO index of 'cuilink link'
  --corpus FILE          PubTator corpus (may be gzipped); a label naming more than 64 ids, which
                         the gold topic's readers refuse, refuses it
  --types REGEX          keep only annotations whose type matches (e.g. 'Disease')
  --split tune|learn     only one part of the fixed tuning split of a training corpus: 'tune' is
                         the ${TUNING_SPLIT_SIZE} documents every default is chosen on, 'learn' the rest
  --split-seed N         seed of the split (default ${TUNING_SPLIT_SEED}; documented, keep it)
  --out FILE             write the JSON report (per label and per semantic type included)
  --predictions FILE     write per-mention predictions as JSONL (input of 'cuilink compare'): gold
                         ids and names, predicted ids and names, scores, and the mention text
                         (from your own corpus file: the output is as sensitive as the corpus)
  --errors FILE          write the misses as JSONL: mention text, gold, prediction, gold rank and a
                         class guess (nil, composite, abbreviation, hierarchy, synonym, other);
                         holds note text, so keep it off shared storage for real notes
  --batch N              notes per linking call (default 32)
  --semantic-types       also print the per-semantic-type table
  --reliability FILE.svg write the reliability diagram of the links' confidence
  --hold-out F           NIL without hand labels: remove from the KB the gold concepts of a seeded
                         share F of the mentions (e.g. 0.1); every mention whose gold is removed
                         must come out NIL. Prints NIL precision/recall/F1 at the link config's
                         NIL thresholds (nil.inKb, nil.confidence) and at other thresholds of the
                         one it decides on (inKb when set), and what the rest lose. A --memory
                         serves without the held-out concepts' labels (as one that never learned them)
  --hold-out-seed S      seed of that draw (default ${HOLD_OUT_SEED}); several (A-B or N,M,…, at most
                         ${MAX_HOLD_OUT_SEEDS}) link the corpus once per draw and report the draws pooled, each
                         draw's row beside it (the other tables are of the first draw's run): NIL F1
                         moves with which concepts a draw takes out
  --non-entities N       also link the corpus with N spans per note that its annotators did not
                         mark (a proxy for NER false positives: docs/confidence.md) and print how
                         many came out NIL; the other figures are of the corpus as given
  --non-entity-seed N    seed of that draw (default ${NON_ENTITY_EVAL_SEED}; calibrate fits on 1)
${LINKER_FLAGS_HELP}
  -h, --help             this text`;

export type LinkerOpener = (options: OpenLinkerOptions) => Promise<LinkingCore>;

/** The corpus's NER types with their mention counts, for a --types that matched none of them. */
async function typesOf(corpusFile: string): Promise<string> {
  const counts = new Map<string, number>();
  for (const g of (await loadPubTatorCorpus(corpusFile)).gold.values()) counts.set(g.label, (counts.get(g.label) ?? 0) + 1);
  if (counts.size === 0) return ' (the corpus has no annotated mentions at all)';
  return ` (the corpus has: ${[...counts].sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t} ${n}`).join(', ')})`;
}

const NO_CONFIDENCE = '--reliability: the links have no confidence (no calibration)';

/** `cuilink eval`, given how to open a linking core (openLinker in the CLI, a fake in tests). */
export function makeEvalCommand(openCore: LinkerOpener): Command {
  return {
    name: 'eval',
    summary: 'Evaluate linking on a PubTator corpus: acc@1/5, MRR, NIL, similarity, nDCG, calibration',
    usage,
    async run(argv) {
      const { values } = parseFlags(argv, {
        ...LINKER_FLAG_OPTIONS,
        corpus: { type: 'string' },
        types: { type: 'string' },
        split: { type: 'string' },
        'split-seed': { type: 'string' },
        out: { type: 'string' },
        predictions: { type: 'string' },
        errors: { type: 'string' },
        batch: { type: 'string' },
        'semantic-types': { type: 'boolean', default: false },
        reliability: { type: 'string' },
        'hold-out': { type: 'string' },
        'hold-out-seed': { type: 'string' },
        'non-entities': { type: 'string' },
        'non-entity-seed': { type: 'string' },
      });
      const indexDir = requireIndexFlag(values.index, 'eval');
      const corpusFile = requireString(values.corpus, 'corpus');
      const batchSize = parseNumberFlag(values.batch, 'batch', 32, { min: 1, integer: true });
      const types = parseTypesFlag(values.types);
      const split = parseSplitPart(values.split);
      const splitSeed = parseNumberFlag(values['split-seed'], 'split-seed', TUNING_SPLIT_SEED, { integer: true });
      // Flags first, then files: a bad corpus or index fails before the model loads.
      const holdOutFraction = values['hold-out'] === undefined ? undefined : parseNumberFlag(values['hold-out'], 'hold-out', 0.1, { min: 0, max: 1 });
      const holdOutSeeds = parseSeeds(values['hold-out-seed'], 'hold-out-seed', HOLD_OUT_SEED);
      if (holdOutFraction === undefined && values['hold-out-seed'] !== undefined) throw new InputError('--hold-out-seed: only with --hold-out F', 'BAD_FLAGS');
      if (values.split === undefined && values['split-seed'] !== undefined) throw new InputError('--split-seed: only with --split tune|learn', 'BAD_FLAGS');
      if (values.reliability !== undefined && values.calibration === 'none') throw new InputError('--reliability: the links have no confidence with --calibration none', 'BAD_FLAGS');
      requireMemory(values);
      // A path that cannot be written fails now, not after the corpus was linked.
      for (const flag of ['out', 'errors', 'predictions', 'reliability'] as const) {
        const path = values[flag];
        if (path !== undefined) checkWritable(path, flag);
      }
      const corpus = await loadPubTatorCorpus(corpusFile, { types });
      if (split !== undefined) keepSplitPart(corpus, split, splitSeed, corpusFile);
      const nonEntities = values['non-entities'] === undefined ? undefined : parseNumberFlag(values['non-entities'], 'non-entities', 0, { min: 1, max: 20, integer: true });
      if (nonEntities === undefined && values['non-entity-seed'] !== undefined) throw new InputError('--non-entity-seed: only with --non-entities N', 'BAD_FLAGS');
      const nonEntitySeed = parseNumberFlag(values['non-entity-seed'], 'non-entity-seed', NON_ENTITY_EVAL_SEED, { integer: true });
      if (corpus.gold.size === 0) throw new InputError(`${corpusFile}: no annotated mentions${types ? ` of types /${values.types}/${await typesOf(corpusFile)}` : ''}`, 'BAD_CORPUS');
      const store = await loadIndexKb(indexDir);
      const hierarchy = Hierarchy.fromStore(store);
      const view = kbOntologyView(store, hierarchy);
      const unknown = [...corpus.gold.values()].filter((g) => !g.ids.some((id) => view.resolve(id) !== undefined));
      // A KB that knows none of the gold ids would score 0.000 everywhere: say so instead of measuring.
      if (unknown.length === corpus.gold.size) throw new InputError(`--index ${indexDir}: its KB holds none of the ${corpus.gold.size} gold mentions' concepts (e.g. ${unknown[0]!.ids[0]}): the corpus and the index use different vocabularies`, 'BAD_CORPUS');
      if (unknown.length > 0) process.stderr.write(`eval: ${unknown.length} of ${corpus.gold.size} gold mentions name no concept of the index's KB (e.g. ${unknown[0]!.ids[0]}): they cannot be linked right\n`);
      const heldOut = holdOutFraction === undefined ? undefined : holdOutConcepts(corpus, store, holdOutFraction, holdOutSeeds[0]!);
      const core = await openCore({ ...linkerRequest(values), indexDir, excludeConcepts: heldOut?.concepts });
      if (values.reliability !== undefined && core.calibrated === false) {
        await core.close();
        throw new InputError(NO_CONFIDENCE, 'BAD_FLAGS');
      }
      let result;
      let nonEntity: NonEntityReport | undefined;
      // Redrawn on a terminal; a plain line every 5 s under a log collector, so a long run is never silent.
      let progress: BuildProgress | undefined;
      let reported = 0;
      try {
        result = await evaluateCorpus(core, corpus, view, {
          batchSize,
          onProgress: (done, total) => {
            progress ??= new BuildProgress('eval: linking mentions', total);
            progress.advance(done - reported);
            reported = done;
          },
        });
        if (nonEntities !== undefined) {
          const sample = withNonEntitySpans(corpus, store, nonEntities, nonEntitySeed);
          nonEntity = nonEntityReport(await evaluateCorpus(core, sample.corpus, view, { batchSize }), sample, nonEntities, nonEntitySeed);
        }
      } finally {
        progress?.finish();
        await core.close();
      }
      const report = buildEvalReport({ corpus: corpusFile, index: indexDir, types: values.types ?? null, versions: core.versions, stats: corpus.stats, result });
      if (split !== undefined) console.log(`split: ${split} part (seed ${splitSeed}, ${TUNING_SPLIT_SIZE} tune documents)`);
      console.log(`${corpusFile}: ${result.notes} notes, ${result.mentions} mentions (${corpus.stats.duplicateAnnotations} duplicate annotations, ${corpus.stats.duplicateDocuments} duplicate documents, ${corpus.stats.skippedNoConcept} without a concept skipped)`);
      console.log(`index ${core.versions.indexVersion}, model ${core.versions.modelVersion}, linker ${core.versions.linkerVersion}${core.versions.memoryVersion ? `, memory ${core.versions.memoryVersion}` : ''}`);
      console.log(`linked in ${result.linkSeconds.toFixed(2)} s: ${result.mentionsPerSecond.toFixed(1)} mentions/s${result.missingPredictions > 0 ? ` (${result.missingPredictions} mentions without output, scored NIL)` : ''}`);
      console.log('');
      console.log(formatMetricsTable(result.metrics, 'byLabel'));
      if (values['semantic-types']) {
        console.log('');
        console.log(formatMetricsTable(result.metrics, 'bySemanticType'));
      }
      const points = confidencePoints(result);
      const confidence = points.length > 0 ? summarizeConfidence(points) : undefined;
      const byStage = stageBreakdown(result);
      console.log('');
      console.log(formatStageTable(byStage));
      if (confidence) {
        console.log(formatConfidence(confidence, 'all linked mentions'));
        console.log(formatCalibrationTest(result.metrics.overall));
      } else console.log('confidence: none (the linker ran without a calibration)');
      let holdOut: HoldOutReport | undefined;
      if (heldOut && holdOutFraction !== undefined) {
        const nil = core.config?.nil ?? { confidence: 0, inKb: 0 };
        if (holdOutSeeds.length === 1) holdOut = holdOutReport(result, heldOut, nil, holdOutSeeds[0]);
        else {
          const runs = [{ result, heldOut, seed: holdOutSeeds[0]! }];
          for (const seed of holdOutSeeds.slice(1)) {
            const drawn = holdOutConcepts(corpus, store, holdOutFraction, seed);
            const again = await openCore({ ...linkerRequest(values), indexDir, excludeConcepts: drawn.concepts, log: () => {} });
            try {
              runs.push({ result: await evaluateCorpus(again, corpus, view, { batchSize }), heldOut: drawn, seed });
            } finally {
              await again.close();
            }
          }
          holdOut = pooledHoldOutReport(runs, nil);
        }
        console.log(formatHoldOut(holdOut));
      }
      if (nonEntity) console.log(formatNonEntity(nonEntity));
      if (values.out !== undefined) writeOutput(values.out, `${JSON.stringify({ ...report, confidence: confidence ?? null, byStage, holdOut: holdOut ?? null, nonEntity: nonEntity ?? null }, null, 2)}\n`, 'out');
      if (values.errors !== undefined) {
        const misses = collectMisses(corpus.notes, result.scored, store, hierarchy);
        writeOutput(values.errors, misses.map((m) => `${JSON.stringify(m)}\n`).join(''), 'errors');
        console.log('');
        console.log(`misses: ${misses.length} (written to ${values.errors})`);
        for (const c of summarizeMisses(misses)) console.log(`  ${c.errorClass.padEnd(13)} ${String(c.count).padStart(4)}  gold in top 5: ${c.goldInTop5}`);
      }
      if (values.predictions !== undefined) {
        try {
          const texts = new Map(corpus.notes.flatMap((n) => n.mentions.map((m) => [mentionKey(n.noteId, m.id), m.text] as const)));
          const nameOf = (id: string) => store.get(id)?.name ?? null;
          await writePredictions(values.predictions, result.scored, (m) => ({ text: texts.get(mentionKey(m.noteId, m.mentionId)), goldNames: m.goldIds.map(nameOf), predictedNames: m.predicted.map(nameOf) }));
        } catch (error) {
          if (error instanceof InputError) throw error;
          throw new InputError(`cannot write ${values.predictions}: ${(error as Error).message}`, 'OUTPUT_ERROR', error);
        }
      }
      // Last, for a core that does not say whether it is calibrated: the other outputs are written by then.
      if (values.reliability !== undefined) {
        if (!confidence) throw new InputError(NO_CONFIDENCE, 'BAD_FLAGS');
        writeOutput(values.reliability, reliabilitySvg(confidence.reliability, `${corpusFile.split('/').at(-1)}${split ? ` (${split})` : ''}: ECE ${confidence.ece?.toFixed(3)}, AUROC ${confidence.auroc?.toFixed(3)}`, confidence.calibratedEce), 'reliability');
      }
      return 0;
    },
  };
}
