import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { linkerRequest } from '../../../src/cli/linker-flags.ts';
import { ConfidenceCalibrator } from '../../../src/link/confidence-calibrator.ts';
import { CONFIDENCE_FEATURES } from '../../../src/link/confidence-features.ts';
import { parseLinkConfig } from '../../../src/link/link-config.ts';
import { readIndexManifest, verifyIndexFiles } from '../../../src/retrieve/index-manifest.ts';
import { readMemoryManifest } from '../../../src/retrieve/memory-manifest.ts';
import { loadStageConfig } from '../../../src/stream/stage-config.ts';
import { fuzzPlan, int, pick, guardedFuzzTest, type FuzzCase } from '../../support/guarded-fuzz.ts';
import { mutateBytes, mutateJson } from '../../support/input-mutations.ts';

// The product rule for operator-supplied files: a clear error for bad input. The JSON files
// validated once at entry (the link config of --link-config, the stage config of --config, a
// calibration file, an index's and a memory version's manifest) are mutated from valid ones (wrong
// types, removed and extra keys, `__proto__` keys, duplicate keys, 1e400, nesting 100k deep, 100k
// items, and bytes: truncated, flipped, BOMs) and read through their real loaders. Each must load
// or be refused with an InputError of its code naming the file; never another error, a stack
// overflow or a hang (a generous guard: test/support/guarded-fuzz.ts). A failure names seed, case
// and mutation; rerun it alone with CUILINK_FUZZ_SEED=<seed> CUILINK_FUZZ_CASES=<case + 1>.

const PLAN = fuzzPlan([20_261_203, 13, 8_086], 120);
const HEX = (c: string) => c.repeat(64);

/** The shipped calibration cut to two trees a part: the same shape, a 100th of the size. */
function shippedCalibration(): unknown {
  const file = JSON.parse(readFileSync('models/default/calibration.json', 'utf8')) as Record<string, { trees?: unknown[]; model?: { trees: unknown[] } }>;
  for (const part of ['right', 'nil', 'nonEntity']) {
    const model = file[part]?.model ?? file[part];
    if (model?.trees) model.trees = model.trees.slice(0, 2);
  }
  return { ...file, fit: { corpus: 'fuzz', seed: 1 } };
}

const n = CONFIDENCE_FEATURES.length;
const zeros = () => Array<number>(n).fill(0);
const ones = () => Array<number>(n).fill(1);

/** A format-1 calibration: logistic parts at the top level. */
const V1_CALIBRATION = { format: 'cuilink-calibration/1', version: 'fuzz', features: [...CONFIDENCE_FEATURES], mean: zeros(), scale: ones(), weights: zeros(), bias: 0.5, nil: { mean: zeros(), scale: ones(), weights: zeros(), bias: -1, trainedPrevalence: 0.1, assumedPrevalence: 0.05 }, nilConfidence: 0.2, models: { biEncoder: HEX('a'), crossEncoder: null }, fit: {} };

const STAGE_CONFIG = { ...loadStageConfig({ env: { CUILINK_REVIEW_TOPIC: 'review', CUILINK_LABEL_TOPIC: 'asks', CUILINK_MEASURE_TOPIC: 'measure' } }), link: parseLinkConfig({ typeFilter: { Disease: ['T047'] }, query: { headNouns: ['disease'] } }) };

const INDEX_MANIFEST = {
  ...(JSON.parse(readFileSync('test/fixtures/eval/index/manifest.json', 'utf8')) as object),
  checksums: { concepts: { bytes: 10, sha256: HEX('a') }, names: { bytes: 20, sha256: HEX('b') }, hnsw: { bytes: 30, sha256: HEX('c') } },
};

const MEMORY_MANIFEST = {
  format: 'cuilink-memory',
  formatVersion: 1,
  memoryVersion: 'v-000001',
  sequence: 1,
  parent: null,
  createdAt: '2026-01-01T00:00:00.000Z',
  model: { id: 'fuzz', sha256: HEX('a'), dims: 4 },
  hnsw: { m: 16, efConstruction: 100, efSearch: 50 },
  counts: { records: 1, nextSeq: 1, surfaces: 1, concepts: 1 },
  files: { records: 'records.jsonl', prototypes: 'prototypes.hnsw' },
  checksums: { records: { bytes: 1, sha256: HEX('b') }, prototypes: { bytes: 2, sha256: HEX('c') } },
  erasedNotes: [HEX('d')],
  rawText: false,
  hashSalt: HEX('e'),
};

interface ConfigKind {
  name: string;
  valid: () => unknown;
  /** The file name the loader reads it under. */
  fileName: string;
  codes: readonly string[];
  /** Reads the file at `file` (in `dir`) as the product does; the path an error must name. `run` returns a problem with what it loaded, if any. */
  load: (file: string, dir: string) => { named: string; run: () => string | undefined };
}

/** What a loaded calibration must give: a probability for any feature vector, never NaN. */
function calibratedProblem(calibrator: ConfidenceCalibrator): string | undefined {
  for (const value of [0, 0.5, 1, -3, 1e6]) {
    const { confidence, inKb } = calibrator.assess(new Float64Array(n).fill(value));
    if (!(confidence >= 0 && confidence <= 1 && inKb >= 0 && inKb <= 1)) return `loaded, and features all ${value} give confidence ${confidence}, inKb ${inKb}`;
  }
  return undefined;
}

/** A loaded link config holds no Infinity (1e400 in the file): the memory's vote shares turn it into NaN scores. */
function linkConfigProblem(config: unknown, at = ''): string | undefined {
  if (typeof config === 'number' && !Number.isFinite(config)) return `loaded with '${at}' ${config}`;
  if (typeof config !== 'object' || config === null) return undefined;
  for (const [key, value] of Object.entries(config)) {
    const problem = linkConfigProblem(value, at === '' ? key : `${at}.${key}`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

const KINDS: readonly ConfigKind[] = [
  // As `cuilink link --link-config FILE` reads it: the flag, then openLinker's parse of what it passed on.
  { name: 'link config', valid: () => parseLinkConfig({ typeFilter: { Disease: ['T047'] } }), fileName: 'link.json', codes: ['BAD_FLAGS', 'BAD_CONFIG'], load: (file) => ({ named: file, run: () => linkConfigProblem(parseLinkConfig(linkerRequest({ 'link-config': file }).config)) }) },
  { name: 'stage config', valid: () => STAGE_CONFIG, fileName: 'stage.json', codes: ['BAD_CONFIG'], load: (file) => ({ named: file, run: () => linkConfigProblem(loadStageConfig({ file, env: {} }).link) }) },
  { name: 'calibration (shipped, trees)', valid: shippedCalibration, fileName: 'calibration.json', codes: ['BAD_CALIBRATION'], load: (file) => ({ named: file, run: () => calibratedProblem(ConfidenceCalibrator.load(file)) }) },
  { name: 'calibration (format 1)', valid: () => V1_CALIBRATION, fileName: 'calibration.json', codes: ['BAD_CALIBRATION'], load: (file) => ({ named: file, run: () => calibratedProblem(ConfidenceCalibrator.load(file)) }) },
  // The files the manifest names are absent: a manifest that passes is then refused for them, naming the index directory.
  { name: 'index manifest', valid: () => INDEX_MANIFEST, fileName: 'manifest.json', codes: ['BAD_INDEX'], load: (_file, dir) => ({ named: dir, run: () => void verifyIndexFiles(dir, readIndexManifest(dir)) }) },
  { name: 'memory manifest', valid: () => MEMORY_MANIFEST, fileName: 'manifest.json', codes: ['BAD_MEMORY'], load: (_file, dir) => ({ named: dir, run: () => void readMemoryManifest(dir) }) },
];

/**
 * A calibration whose first tree of a part is replaced by a chain of splits of a chosen depth, on
 * a chosen feature, ending in chosen leaves: the shapes a recursive reader or a logit trips on.
 */
function treeMutant(random: () => number, valid: Record<string, unknown>): { what: string; text: string } {
  const depth = pick(random, [1, 8, 64, 65, 5_000, 100_000]);
  const feature = pick(random, ['0', String(n - 1), String(n), '-1', '0.5', '2147483648']);
  const threshold = pick(random, ['0.5', '1e400', '-1e400', '"NaN"', 'null']);
  const leaf = pick(random, ['1', '1e400', '-1e400', '"NaN"', '{}']);
  const tree = `${`{"feature":${feature},"threshold":${threshold},"above":{"leaf":${leaf}},"below":`.repeat(depth)}{"leaf":${leaf}}${'}'.repeat(depth)}`;
  const part = pick(random, ['right', 'nil', 'nonEntity'].filter((p) => valid[p] !== undefined));
  const copy = JSON.parse(JSON.stringify(valid)) as Record<string, Record<string, unknown>>;
  const model = (copy[part]!.model ?? copy[part]) as Record<string, unknown>;
  Object.assign(model, { kind: 'trees', base: 0, rate: 0.1, trees: ['TREE'] });
  for (const key of ['mean', 'scale', 'weights', 'bias']) delete model[key];
  return { what: `${part}: a tree ${depth} splits deep on feature ${feature}, threshold ${threshold}, leaves ${leaf}`, text: JSON.stringify(copy).replace('"TREE"', tree) };
}

function buildCase(random: () => number, _index: number, dir: string): FuzzCase {
  const kind = pick(random, KINDS);
  const valid = kind.valid();
  const file = join(dir, kind.fileName);
  let what: string;
  if (kind.codes.includes('BAD_CALIBRATION') && int(random, 3) === 0) {
    const mutated = treeMutant(random, valid as Record<string, unknown>);
    writeFileSync(file, mutated.text);
    what = mutated.what;
  } else if (int(random, 4) === 0) {
    const mutated = mutateBytes(random, Buffer.from(JSON.stringify(valid, null, 2)));
    writeFileSync(file, mutated.bytes);
    what = mutated.what;
  } else {
    const mutated = mutateJson(random, valid);
    writeFileSync(file, mutated.text);
    what = mutated.what;
  }
  const { named, run } = kind.load(file, dir);
  return {
    what: `${kind.name}: ${what}`,
    file: named,
    codes: kind.codes,
    run,
  };
}

await guardedFuzzTest('mutated link, stage and calibration configs and index and memory manifests load, or are refused with their code naming the file', new URL(import.meta.url), PLAN, buildCase);
