import { writeFileSync } from 'node:fs';
import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag, requireString } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { loadPubTatorCorpus, type GoldCorpus } from '../../eval/gold.ts';
import { MemoryStore } from '../../retrieve/memory-store.ts';
import { resolveMemoryDir } from '../../retrieve/memory-root.ts';
import { normalizeName } from '../../text/normalize.ts';
import { kbOntologyView, loadIndexKb } from '../../eval/kb-ontology-view.ts';
import { keepSplitPart } from '../../eval/offline-eval.ts';
import { fitCalibration } from '../../eval/confidence/fit-calibration.ts';
import { TUNING_SPLIT_SEED, parseSplitPart } from '../../eval/tuning-split.ts';
import { summarizeConfidence } from '../../eval/confidence/selective-metrics.ts';
import { ConfidenceCalibrator } from '../../link/confidence-calibrator.ts';
import { openLinker } from '../../link/open-linker.ts';
import { LINKER_FLAG_OPTIONS, LINKER_FLAGS_HELP, linkerRequest } from '../linker-flags.ts';
import { formatConfidence } from '../../eval/confidence/confidence-format.ts';

/**
 * L2 penalty of the shipped fit: of 1, 10 and 50 (tune split fits), 50 ranked the learn part of
 * train best (AUROC 0.874 against 0.867 / 0.869; ECE 0.015–0.019 for all three). Dev was not used.
 */
const DEFAULT_L2 = 50;
/** Four runs of the tune split: 380 stranded mentions to learn NIL from. */
const DEFAULT_NIL_RUNS = 4;
/**
 * Half the held-out protocol's 10%. An assumption about deployments, not a fit: on train (NIL part
 * fitted on tune, read on learn) 10% read NIL best (F1 0.47) but raised ECE on natural text to
 * 0.039; 5% keeps it at 0.023 (F1 0.36); 2.5% at 0.019 (F1 0.23). Dev was not used.
 */
const DEFAULT_NIL_PREVALENCE = 0.05;

const usage = `Usage: cuilink calibrate --index DIR --corpus FILE.PubTator --out FILE [options]

Fits the confidence calibration: links every annotated mention of one part of the fixed tuning
split (default: the tune part; the split of 'cuilink eval --split') with the models and link
config given, and fits a logistic model of "the top-1 is right" over the features each link
already has (its stage, similarity, score, margin to the runner-up, ties, rerank, memory
support, mention length and shape: src/link/confidence-features.ts). Writes a versioned JSON
file that names the models' checksums: a linker refuses it for other models. Prints the fit's
AUROC, precision at 80% / 90% coverage and ECE on the fitting data (in-sample: report held-out
numbers with 'cuilink eval').

Options:
  --index DIR            index directory
  --corpus FILE          PubTator corpus (NCBI-disease train)
  --split tune|learn     part of the tuning split to fit on (default tune)
  --split-seed N         seed of the split (default ${TUNING_SPLIT_SEED})
  --out FILE             the calibration file to write (e.g. models/default/calibration.json)
  --version NAME         version recorded in the file (default: calibration-<date>)
  --l2 X                 L2 penalty on the standardized weights (default ${DEFAULT_L2})
  --nil-runs N           held-out-concept runs the NIL part is fitted on (default ${DEFAULT_NIL_RUNS}; 0: no
                         NIL part, confidence is then P(right) as if every concept were in the KB)
  --nil-prevalence P     share of mentions without a KB concept a deployment is assumed to see
                         (default ${DEFAULT_NIL_PREVALENCE})
  --with-memory ROOT     also fit on the part's links made with this labelled-mention memory, so
                         memory-decided links get a fitted confidence (the memory must hold no label
                         of the part's notes: for the tune part, one from the learn part)
${LINKER_FLAGS_HELP}
  -h, --help             this text`;

export const calibrate: Command = {
  name: 'calibrate',
  summary: 'Fit the confidence calibration on the tune split (a probability that the top-1 is right)',
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
      'nil-runs': { type: 'string' },
      'nil-prevalence': { type: 'string' },
      'with-memory': { type: 'string' },
    });
    const indexDir = requireString(values.index, 'index');
    const corpusFile = requireString(values.corpus, 'corpus');
    const out = requireString(values.out, 'out');
    if (values.calibration !== undefined) throw new InputError('--calibration: calibrate fits one; links are made without any', 'BAD_FLAGS');
    if (values.memory !== undefined) throw new InputError('--memory: calibrate links without a memory; --with-memory ROOT adds a pass with one', 'BAD_FLAGS');
    const split = parseSplitPart(values.split ?? 'tune')!;
    const seed = parseNumberFlag(values['split-seed'], 'split-seed', TUNING_SPLIT_SEED, { integer: true });
    const l2 = parseNumberFlag(values.l2, 'l2', DEFAULT_L2, { min: 0 });
    const nilRuns = parseNumberFlag(values['nil-runs'], 'nil-runs', DEFAULT_NIL_RUNS, { min: 0, max: 50, integer: true });
    const nilPrevalence = parseNumberFlag(values['nil-prevalence'], 'nil-prevalence', DEFAULT_NIL_PREVALENCE, { min: 0.001, max: 0.5 });
    const corpus = await loadPubTatorCorpus(corpusFile);
    keepSplitPart(corpus, split, seed);
    if (corpus.gold.size === 0) throw new InputError(`${corpusFile}: the ${split} part has no annotated mentions: nothing to fit on`, 'BAD_CORPUS');
    const withMemory = values['with-memory'];
    if (withMemory !== undefined) refuseMemoryOverlap(withMemory, corpus, split);
    const store = await loadIndexKb(indexDir);
    const { file, rows, labels } = await fitCalibration({
      corpus,
      store,
      view: kbOntologyView(store),
      open: (excludeConcepts) => openLinker({ ...linkerRequest(values), indexDir, calibration: false, excludeConcepts, log: excludeConcepts ? () => {} : undefined }),
      openWithMemory: withMemory === undefined ? undefined : () => openLinker({ ...linkerRequest(values), indexDir, calibration: false, memoryDir: withMemory, memoryPollMs: 0, log: () => {} }),
      l2,
      nilRuns,
      nilPrevalence,
      version: values.version ?? `calibration-${new Date().toISOString().slice(0, 10)}`,
      fit: { corpus: corpusFile.split('/').at(-1), split, seed },
    });
    try {
      writeFileSync(out, `${JSON.stringify(file, null, 2)}\n`);
    } catch (error) {
      throw new InputError(`cannot write ${out}: ${(error as Error).message}`, 'OUTPUT_ERROR', error);
    }
    const fitted = ConfidenceCalibrator.load(out);
    const points = rows.map((x, i) => ({ confidence: fitted.probability(x), correct: labels[i]! }));
    const memoryPass = file.fit.memoryPass as { mentions: number; memoryDecided: number; memoryVersion: string } | undefined;
    console.log(`calibrate: ${rows.length} linked mentions of the ${split} part (seed ${seed})${memoryPass ? `, ${memoryPass.mentions} of them linked with memory ${memoryPass.memoryVersion} (${memoryPass.memoryDecided} memory-decided)` : ''}, ${labels.filter(Boolean).length} right at top-1; written to ${out}`);
    console.log(formatConfidence(summarizeConfidence(points), 'in-sample'));
    const nil = file.fit.nil as { runs: number; mentions: number; stranded: number } | undefined;
    if (file.nil && nil) console.log(`NIL part: ${nil.runs} held-out-concept runs, ${nil.stranded} of ${nil.mentions} linked mentions had lost their concept; read at an assumed ${file.nil.assumedPrevalence} of mentions without one`);
    return 0;
  },
};

/** A memory holding labels of the notes it would be fitted on would make its links look surer than they are. */
function refuseMemoryOverlap(root: string, corpus: GoldCorpus, split: string): void {
  const store = MemoryStore.open(resolveMemoryDir(root).dir, normalizeName);
  // Matched by note key: a memory without raw text holds note ids only as keyed hashes.
  const held = new Set(store.list().map((r) => store.recordNoteKey(r)));
  const notes = corpus.notes.map((n) => n.noteId).filter((id) => held.has(store.noteKey(id)));
  const overlap = store.recordsOfNotes(notes);
  if (overlap.length > 0) throw new InputError(`--with-memory ${root}: holds ${overlap.length} label(s) of the ${split} part's notes (e.g. note ${notes[0]}); fit with a memory learned elsewhere (memory add --split learn for the tune part)`, 'BAD_FLAGS');
}
