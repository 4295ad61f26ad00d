import { rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { checkWritable, writeOutput } from '../output-files.ts';
import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag, requireString } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { loadPubTatorCorpus, type GoldCorpus } from '../../eval/gold.ts';
import { MemoryStore } from '../../retrieve/memory-store.ts';
import { resolveMemoryDir } from '../../retrieve/memory-root.ts';
import { normalizeName } from '../../text/normalize.ts';
import { kbOntologyView, loadIndexKb } from '../../eval/kb-ontology-view.ts';
import { evaluateCorpus, keepSplitPart } from '../../eval/offline-eval.ts';
import { NIL_RULE_MAX_LOSS, NIL_RULE_MIN_PRECISION_IN_KB, NIL_RULE_SEEDS, holdOutConcepts, nilThresholdByRule, pooledHoldOutSweep, type NilScore } from '../../eval/confidence/held-out-concepts.ts';
import { fitCalibration, RECALIBRATIONS, type CalibrationModelChoice, type Recalibration } from '../../eval/confidence/fit-calibration.ts';
import { TUNING_SPLIT_SEED, parseSplitPart } from '../../eval/tuning-split.ts';
import { summarizeConfidence } from '../../eval/confidence/selective-metrics.ts';
import { ConfidenceCalibrator } from '../../link/confidence-calibrator.ts';
import { openLinker } from '../../link/open-linker.ts';
import { LINKER_FLAG_OPTIONS, MODEL_FLAGS_HELP, linkerRequest, requireIndexFlag } from '../linker-flags.ts';
import { ENCODER_FLAGS_HELP } from '../encoder-flags.ts';
import { formatConfidence } from '../../eval/confidence/confidence-format.ts';

/**
 * The shipped recipe: boosted trees for both parts, fit on the learn part and chosen on the tune
 * part by a rule stated before measuring (docs/confidence.md): against the same data fit by the
 * logistic recipe, tune AUROC 0.908 → 0.929, ECE 0.026 → 0.023. Dev was not used.
 */
const DEFAULT_CALIBRATOR = 'trees';
const DEFAULT_TREES = { rounds: 200, rate: 0.05, depth: 3, minLeaf: 40, l2: 1 };
/**
 * L2 penalty of the logistic recipe: of 1, 10 and 50 (tune split fits), 50 ranked the learn part of
 * train best (AUROC 0.874 against 0.867 / 0.869; ECE 0.015–0.019 for all three). Dev was not used.
 */
const DEFAULT_L2 = 50;
const DEFAULT_RECALIBRATE = 'none';
/** Four held-out-concept runs: 1,700 stranded mentions of the learn part to learn NIL from. */
const DEFAULT_NIL_RUNS = 4;
/**
 * Half the held-out protocol's 10%. An assumption about deployments, not a fit: on train (NIL part
 * fitted on tune, read on learn) 10% read NIL best (F1 0.47) but raised ECE on natural text to
 * 0.039; 5% keeps it at 0.023 (F1 0.36); 2.5% at 0.019 (F1 0.23). Dev was not used.
 */
const DEFAULT_NIL_PREVALENCE = 0.05;
/**
 * Unmarked spans per note the non-entity part learns from (0: no such part). Candidate E of
 * bench/results/confidence-experiments.txt (night section), shipped by its rule: tune's unmarked
 * spans NIL 3% -> 83%, held-out-concept NIL F1 on fresh learn runs 0.653 -> 0.634. Dev was not used.
 */
const DEFAULT_NON_ENTITIES = 2;
/** Seed of the fitted spans' draw (eval --non-entities reads other seeds). */
const DEFAULT_NON_ENTITY_SEED = 1;
/** Share of NER false positives among a deployment's mentions: an assumption like DEFAULT_NIL_PREVALENCE, not a fit. */
const DEFAULT_NON_ENTITY_PREVALENCE = 0.05;
/** The thresholds the NIL rule chooses by default (docs/confidence.md, bench/results/confidence-experiments.txt). */
const DEFAULT_NIL_RULE = 'in-kb';

const usage = `Usage: cuilink calibrate --index DIR --corpus FILE.PubTator --out FILE [options]

Fits the confidence calibration: links every annotated mention of one part of the fixed tuning
split (default: the learn part, so that the tune part stays unseen for choosing the recipe and
the NIL threshold; the split of 'cuilink eval --split') with the models and link config given,
and fits a model of "the top-1 is right" over the features each link already has (its stage,
similarity, score, margin to the runner-up, ties, rerank, memory support, mention length and
shape, how well it fits the chosen concept's best name: src/link/confidence-features.ts), plus a NIL part on held-out-concept runs. Writes a
versioned JSON file that names the models' checksums: a linker refuses it for other models.
Prints the fit's AUROC, precision at 80% / 90% coverage and ECE on the fitting data (in-sample:
report held-out numbers with 'cuilink eval --split tune').

Options:
  --index DIR            index directory
  --corpus FILE          PubTator corpus (NCBI-disease train); a label naming more than 64 ids,
                         which the gold topic's readers refuse, refuses it
  --split tune|learn     part of the tuning split to fit on (default learn; a model trained on
                         the learn part, like the context reranker, is calibrated on tune)
  --split-seed N         seed of the split (default ${TUNING_SPLIT_SEED})
  --out FILE             the calibration file to write (e.g. models/default/calibration.json)
  --version NAME         version recorded in the file (default: calibration-<date>)
  --calibrator trees|logistic
                         boosted trees or an L2 logistic model, both parts (default ${DEFAULT_CALIBRATOR})
  --rounds N             trees: boosting rounds (default ${DEFAULT_TREES.rounds})
  --depth N              trees: splits from root to leaf (default ${DEFAULT_TREES.depth})
  --min-leaf N           trees: fewest fitting examples on each side of a split (default ${DEFAULT_TREES.minLeaf})
  --rate X               trees: learning rate (default ${DEFAULT_TREES.rate})
  --l2 X                 L2 penalty: logistic weights (default ${DEFAULT_L2}), tree leaves (default ${DEFAULT_TREES.l2})
  --recalibrate none|concept-folds|mixed-folds
                         concept-folds: the confidence's logit goes through a 1-D map fit on logits
                         the model gave mentions of concepts left out of its fit (5 folds by gold
                         concept), so links to concepts the fit never saw are not read with the
                         fitted ones' accuracy; mixed-folds: fit on those and on note-fold logits
                         pooled (default ${DEFAULT_RECALIBRATE}; docs/confidence.md)
  --nil-runs N           held-out-concept runs the NIL part is fitted on (default ${DEFAULT_NIL_RUNS}; 0: no
                         NIL part, confidence is then P(right) as if every concept were in the KB)
  --nil-prevalence P     share of mentions without a KB concept a deployment is assumed to see
                         (default ${DEFAULT_NIL_PREVALENCE})
  --non-entities N       unmarked spans per note the non-entity part is fitted on (P(the mention names
                         no concept), against the natural links; P(in KB) is then P(names one) ·
                         P(in KB | names one)); 0: no such part (default ${DEFAULT_NON_ENTITIES}). The spans stand in for
                         NER false positives: text the corpus's annotators did not mark (docs/confidence.md)
  --non-entity-seed N    seed of their draw (default ${DEFAULT_NON_ENTITY_SEED})
  --non-entity-prevalence P
                         share of NER false positives a deployment is assumed to see (default ${DEFAULT_NON_ENTITY_PREVALENCE})
  --nil-rule in-kb|confidence|both|none
                         which NIL thresholds the rule chooses and records in the file, which
                         linkers use unless their link config names them (in-kb: a threshold on
                         P(in KB), the NIL part alone; confidence: on the confidence, the default
                         with --nil-runs 0; both: P(in KB), then a floor on confidence with it in
                         place; default ${DEFAULT_NIL_RULE}). The rule:
                         link the tune part nine times, each run with the concepts of a seeded 10%
                         of its mentions held out, and take the largest threshold of a 0.025-step
                         sweep at which the other mentions, pooled, lose at most 0.4 point of linked
                         acc@1 (and, on P(in KB), NIL precision is at least 0.8; docs/confidence.md)
  --nil-in-kb X          record X as the threshold on P(in KB) (default: the rule's, or 0)
  --nil-confidence X     record X as the threshold on confidence (default: the rule's, or 0); with
                         a threshold given and no --nil-rule, the rule does not run for it
  --with-memory ROOT     also fit on the part's links made with this labelled-mention memory, so
                         memory-decided links get a fitted confidence (the memory must hold no label
                         of the part's notes: for the learn part, one from the tune part)
${MODEL_FLAGS_HELP}
  --memory, --calibration  refused: the fit links without a memory (--with-memory adds a pass with
                        one) and without a calibration (it fits one)
${ENCODER_FLAGS_HELP}
  -h, --help             this text`;

export const calibrate: Command = {
  name: 'calibrate',
  summary: 'Fit the confidence calibration on the learn part of the tuning split (a probability that the top-1 is right)',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...LINKER_FLAG_OPTIONS,
      corpus: { type: 'string' },
      split: { type: 'string' },
      'split-seed': { type: 'string' },
      out: { type: 'string' },
      version: { type: 'string' },
      l2: { type: 'string' },
      calibrator: { type: 'string' },
      rounds: { type: 'string' },
      depth: { type: 'string' },
      'min-leaf': { type: 'string' },
      rate: { type: 'string' },
      'nil-runs': { type: 'string' },
      'nil-prevalence': { type: 'string' },
      'with-memory': { type: 'string' },
      recalibrate: { type: 'string' },
      'nil-confidence': { type: 'string' },
      'nil-in-kb': { type: 'string' },
      'nil-rule': { type: 'string' },
      'non-entities': { type: 'string' },
      'non-entity-seed': { type: 'string' },
      'non-entity-prevalence': { type: 'string' },
    });
    const indexDir = requireIndexFlag(values.index, 'calibrate');
    const corpusFile = requireString(values.corpus, 'corpus');
    const out = requireString(values.out, 'out');
    // Written only at the end, after minutes of linking: a path that cannot be written fails now.
    checkWritable(out, 'out');
    if (values.calibration !== undefined) throw new InputError('--calibration: calibrate fits one; links are made without any', 'BAD_FLAGS');
    if (values.memory !== undefined) throw new InputError('--memory: calibrate links without a memory; --with-memory ROOT adds a pass with one', 'BAD_FLAGS');
    const split = parseSplitPart(values.split ?? 'learn')!;
    const seed = parseNumberFlag(values['split-seed'], 'split-seed', TUNING_SPLIT_SEED, { integer: true });
    const model = parseModelChoice(values);
    const recalibrate = values.recalibrate ?? DEFAULT_RECALIBRATE;
    if (!(RECALIBRATIONS as readonly string[]).includes(recalibrate)) throw new InputError(`--recalibrate: ${RECALIBRATIONS.join(', ')}, not '${String(recalibrate)}'`, 'BAD_FLAGS');
    const nilRuns = parseNumberFlag(values['nil-runs'], 'nil-runs', DEFAULT_NIL_RUNS, { min: 0, max: 50, integer: true });
    const nilRule = parseNilRule(values, nilRuns);
    const nilFixed = {
      confidence: parseNumberFlag(values['nil-confidence'], 'nil-confidence', 0, { min: 0, max: 1 }),
      inKb: parseNumberFlag(values['nil-in-kb'], 'nil-in-kb', 0, { min: 0, max: 1 }),
    };
    const nilPrevalence = parseNumberFlag(values['nil-prevalence'], 'nil-prevalence', DEFAULT_NIL_PREVALENCE, { min: 0.001, max: 0.5 });
    const nonEntities = {
      perNote: parseNumberFlag(values['non-entities'], 'non-entities', DEFAULT_NON_ENTITIES, { min: 0, max: 20, integer: true }),
      seed: parseNumberFlag(values['non-entity-seed'], 'non-entity-seed', DEFAULT_NON_ENTITY_SEED, { integer: true }),
      prevalence: parseNumberFlag(values['non-entity-prevalence'], 'non-entity-prevalence', DEFAULT_NON_ENTITY_PREVALENCE, { min: 0.001, max: 0.5 }),
    };
    if (nonEntities.perNote === 0 && (values['non-entity-seed'] !== undefined || values['non-entity-prevalence'] !== undefined)) throw new InputError('--non-entity-seed / --non-entity-prevalence: only with --non-entities N (N > 0)', 'BAD_FLAGS');
    const corpus = await loadPubTatorCorpus(corpusFile);
    keepSplitPart(corpus, split, seed, corpusFile);
    if (corpus.gold.size === 0) throw new InputError(`${corpusFile}: the ${split} part has no annotated mentions: nothing to fit on`, 'BAD_CORPUS');
    const withMemory = values['with-memory'];
    if (withMemory !== undefined) refuseMemoryOverlap(withMemory, corpus, split);
    const store = await loadIndexKb(indexDir);
    const { file, rows, labels, pointGroups } = await fitCalibration({
      corpus,
      store,
      view: kbOntologyView(store),
      open: (excludeConcepts) => openLinker({ ...linkerRequest(values), indexDir, calibration: false, excludeConcepts, log: excludeConcepts ? () => {} : undefined }),
      openWithMemory: withMemory === undefined ? undefined : () => openLinker({ ...linkerRequest(values), indexDir, calibration: false, memoryDir: withMemory, memoryPollMs: 0, log: () => {} }),
      model,
      recalibrate: recalibrate as Recalibration,
      nilRuns,
      nilPrevalence,
      nonEntities,
      version: values.version ?? `calibration-${new Date().toISOString().slice(0, 10)}`,
      fit: { corpus: corpusFile.split('/').at(-1), split, seed },
    });
    const write = (path: string) => writeOutput(path, `${JSON.stringify(file, null, 2)}\n`, 'out');
    // The NIL rule links with the fitted file before its thresholds are chosen: that draft goes
    // beside --out, so a run that fails part-way leaves --out (often the shipped file) as it was.
    const draft = join(dirname(out), `.${basename(out)}.${process.pid}.draft`);
    write(draft);
    let nilLine: string;
    try {
      file.nilConfidence = nilFixed.confidence;
      file.nilInKb = nilFixed.inKb;
      if (nilRule.length > 0) {
        // The rule reads the fitted confidence, so the file is written first and linked with.
        const tune = split === 'tune' ? corpus : await loadPubTatorCorpus(corpusFile);
        if (tune !== corpus) keepSplitPart(tune, 'tune', seed, corpusFile);
        const runs: Parameters<typeof pooledHoldOutSweep>[0][number][] = [];
        for (const ruleSeed of NIL_RULE_SEEDS) {
          const heldOut = holdOutConcepts(tune, store, NIL_RULE_FRACTION, ruleSeed);
          const blind = await openLinker({ ...linkerRequest(values), indexDir, calibration: draft, excludeConcepts: heldOut.concepts, log: () => {} });
          try {
            runs.push({ result: await evaluateCorpus(blind, tune, kbOntologyView(store)), heldOut });
          } finally {
            await blind.close();
          }
        }
        // In order: each threshold is chosen with those before it in place (the loss counts them all).
        const lines = nilRule.map((by) => {
          const fixed = { confidence: file.nilConfidence!, inKb: file.nilInKb! };
          const chosen = nilThresholdByRule({ sweep: pooledHoldOutSweep(runs, by, fixed) }, NIL_RULE_MAX_LOSS, by === 'inKb' ? NIL_RULE_MIN_PRECISION_IN_KB : 0);
          if (by === 'inKb') file.nilInKb = chosen?.threshold ?? 0;
          else file.nilConfidence = chosen?.threshold ?? 0;
          const score = by === 'inKb' ? 'P(in KB)' : 'confidence';
          return chosen
            ? `NIL threshold on ${score} ${chosen.threshold} by the rule (tune part${split === 'tune' ? ', the fitted part itself' : ', held out from the fit'}, ${NIL_RULE_SEEDS.length} runs pooled, each holding out the concepts of ${NIL_RULE_FRACTION * 100}% of its mentions, seeds ${NIL_RULE_SEEDS.join(', ')}): NIL precision ${threeDecimals(chosen.nilPrecision)}, recall ${threeDecimals(chosen.nilRecall)}, F1 ${threeDecimals(chosen.nilF1)}; the others lose ${(chosen.othersLoss * 100).toFixed(2)} point(s) of linked acc@1 (${chosen.othersLost} right links, ${chosen.othersLostMentions} distinct mentions)`
            : `NIL threshold on ${score} 0: at no threshold of the sweep do the tune part's other mentions lose at most ${NIL_RULE_MAX_LOSS * 100} point of linked acc@1${by === 'inKb' ? ` with NIL precision at least ${NIL_RULE_MIN_PRECISION_IN_KB}` : ''}`;
        });
        nilLine = lines.join('\n');
      } else {
        nilLine = 'NIL thresholds as given, no rule';
      }
      nilLine += ` (recorded: nilInKb ${file.nilInKb}, nilConfidence ${file.nilConfidence})`;
      write(out);
    } finally {
      rmSync(draft, { force: true });
    }
    const fitted = ConfidenceCalibrator.load(out);
    const points = rows.map((x, i) => ({ confidence: fitted.probability(x), correct: labels[i]!, group: pointGroups[i] }));
    const memoryPass = file.fit.memoryPass as { mentions: number; memoryDecided: number; memoryVersion: string } | undefined;
    console.log(`calibrate: ${rows.length} linked mentions of the ${split} part (seed ${seed})${memoryPass ? `, ${memoryPass.mentions} of them linked with memory ${memoryPass.memoryVersion} (${memoryPass.memoryDecided} memory-decided)` : ''}, ${labels.filter(Boolean).length} right at top-1; written to ${out}`);
    console.log(formatConfidence(summarizeConfidence(points), 'in-sample'));
    const nil = file.fit.nil as { runs: number; mentions: number; stranded: number } | undefined;
    if (file.nil && nil) console.log(`NIL part: ${nil.runs} held-out-concept runs, ${nil.stranded} of ${nil.mentions} linked mentions had lost their concept; read at an assumed ${file.nil.assumedPrevalence} of mentions without one`);
    const nonEntity = file.fit.nonEntity as { positives: number; mentions: number; seed: number } | undefined;
    if (file.nonEntity && nonEntity) console.log(`non-entity part: ${nonEntity.positives} unmarked spans (seed ${nonEntity.seed}) against ${nonEntity.mentions - nonEntity.positives} natural links; read at an assumed ${file.nonEntity.assumedPrevalence} of mentions that name nothing`);
    console.log(nilLine);
    return 0;
  },
};

function parseModelChoice(values: Record<string, string | boolean | undefined>): CalibrationModelChoice {
  const kind = values.calibrator ?? DEFAULT_CALIBRATOR;
  const num = (name: string, fallback: number, options: { min?: number; max?: number; integer?: boolean }) => parseNumberFlag(values[name] as string | undefined, name, fallback, options);
  if (kind === 'logistic') {
    const treeFlag = ['rounds', 'depth', 'min-leaf', 'rate'].find((f) => values[f] !== undefined);
    if (treeFlag) throw new InputError(`--${treeFlag}: only for --calibrator trees`, 'BAD_FLAGS');
    return { kind, l2: num('l2', DEFAULT_L2, { min: 0 }) };
  }
  if (kind !== 'trees') throw new InputError(`--calibrator: trees or logistic, not '${String(kind)}'`, 'BAD_FLAGS');
  return {
    kind,
    rounds: num('rounds', DEFAULT_TREES.rounds, { min: 1, max: 5000, integer: true }),
    depth: num('depth', DEFAULT_TREES.depth, { min: 1, max: 8, integer: true }),
    minLeaf: num('min-leaf', DEFAULT_TREES.minLeaf, { min: 1, integer: true }),
    rate: num('rate', DEFAULT_TREES.rate, { min: 0.001, max: 1 }),
    l2: num('l2', DEFAULT_TREES.l2, { min: 0 }),
  };
}

/**
 * Which thresholds the NIL rule chooses, in order (`both`: P(in KB) first, then a floor on
 * confidence with it in place); a threshold given by its own flag is not also chosen.
 */
function parseNilRule(values: Record<string, string | boolean | undefined>, nilRuns: number): NilScore[] {
  // Without a NIL part P(in KB) is 1 everywhere: only confidence is left to threshold. A threshold
  // given by its own flag is recorded as given, and then no rule runs by default.
  const preferred = nilRuns > 0 ? DEFAULT_NIL_RULE : 'confidence';
  const given = (['in-kb', 'confidence'] as const).filter((f) => values[`nil-${f}`] !== undefined);
  const flag = values['nil-rule'] ?? (given.length === 0 ? preferred : 'none');
  const rules: Record<string, NilScore[]> = { 'in-kb': ['inKb'], confidence: ['confidence'], both: ['inKb', 'confidence'], none: [] };
  const rule = typeof flag === 'string' && Object.hasOwn(rules, flag) ? rules[flag] : undefined;
  if (rule === undefined) throw new InputError(`--nil-rule: in-kb, confidence, both or none, not '${String(flag)}'`, 'BAD_FLAGS');
  if (rule.includes('inKb') && nilRuns === 0) throw new InputError(`--nil-rule ${String(flag)} needs a NIL part: not with --nil-runs 0`, 'BAD_FLAGS');
  if (given.includes('in-kb') && nilRuns === 0) throw new InputError('--nil-in-kb needs a NIL part (P(in KB) is 1 without one): not with --nil-runs 0', 'BAD_FLAGS');
  const clash = given.find((f) => rule.includes(f === 'in-kb' ? 'inKb' : 'confidence'));
  if (clash !== undefined) throw new InputError(`--nil-${clash} with --nil-rule ${String(flag)}: give the threshold or let the rule choose it, not both`, 'BAD_FLAGS');
  return rule;
}

/** Share of the tune part's mentions whose concepts the NIL rule holds out (as `eval --hold-out 0.1`). */
const NIL_RULE_FRACTION = 0.1;

const threeDecimals = (v: number | null) => (v === null ? '—' : v.toFixed(3));

/** A memory holding labels of the notes it would be fitted on would make its links look surer than they are. */
function refuseMemoryOverlap(root: string, corpus: GoldCorpus, split: string): void {
  const store = MemoryStore.open(resolveMemoryDir(root).dir, normalizeName);
  // Matched by note key: a memory without raw text holds note ids only as keyed hashes.
  const held = new Set(store.list().map((r) => store.recordNoteKey(r)));
  const notes = corpus.notes.map((n) => n.noteId).filter((id) => held.has(store.noteKey(id)));
  const overlap = store.recordsOfNotes(notes);
  if (overlap.length > 0) throw new InputError(`--with-memory ${root}: holds ${overlap.length} label(s) of the ${split} part's notes (e.g. note ${notes[0]}); fit with a memory learned elsewhere (memory add --split learn for the tune part)`, 'BAD_FLAGS');
}
