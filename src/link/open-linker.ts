import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { InputError } from '../kb/errors.ts';
import { PACKAGE_ROOT } from '../kb/package-root.ts';
import { BiEncoder } from '../encode/bi-encoder.ts';
import { CrossEncoder } from '../encode/cross-encoder.ts';
import type { ProviderChoice } from '../encode/execution-provider.ts';
import { readModelManifest, rowsIndependentOfBatch, type ModelManifest, type Precision } from '../encode/manifest.ts';
import { buildQuery } from '../text/context-window.ts';
import { findAbbreviationDefinitions } from '../text/abbreviations.ts';
import { normalizeName } from '../text/normalize.ts';
import { CandidateRetriever } from '../retrieve/candidate-retriever.ts';
import { LinkIndex } from '../retrieve/link-index.ts';
import { LooseMatchTable } from '../retrieve/loose-match-table.ts';
import { XrefNameTable } from '../retrieve/xref-name-table.ts';
import { SparseFusion } from '../retrieve/sparse-fusion.ts';
import { looseKey, unqualifiedKey } from '../text/loose-key.ts';
import { AbbreviationInventory } from '../text/abbreviation-inventory.ts';
import { HierarchyPreference } from './hierarchy-preference.ts';
import { resolveIndexDir } from '../retrieve/index-versions.ts';
import { ExactNameVectors } from '../retrieve/exact-name-vectors.ts';
import { Reranker } from '../rerank/reranker.ts';
import { LinkCache } from './link-cache.ts';
import { ConfidenceCalibrator } from './confidence-calibrator.ts';
import { needsLooseTable } from './linking-stages.ts';
import { parseLinkConfig } from './link-config.ts';
import { isContextFree, LinkMemo } from './link-memo.ts';
import { Linker, type AbbreviationFinder } from './linker.ts';
import { LINKER_VERSION } from './version.ts';
import { MemoryWatcher } from './memory-watcher.ts';
import { linkConfigDifferences } from './fitted-link-config.ts';

export interface OpenLinkerOptions {
  /** An index directory, or an index root of versions whose `CURRENT` names the one to open (src/retrieve/index-versions.ts). */
  indexDir: string;
  /** Bi-encoder directory; the one recorded in the index manifest when absent. */
  modelDir?: string;
  /** Cross-encoder directory; `models/default/crossencoder` when present, or none (`false`). */
  rerankerDir?: string | false;
  provider?: ProviderChoice;
  deviceId?: number;
  /** Intra-op threads per ONNX session. */
  threads?: number;
  /** Model file precision; int8 on the CPU and fp16 on CUDA when absent. */
  precision?: Precision;
  /** Link options (src/link/link-config.ts), validated here. */
  config?: Record<string, unknown>;
  /** Which models were loaded from where, and why the reranker is off; stderr by default. */
  log?: (line: string) => void;
  /** Set-up detail (the execution-provider fallback); see EncoderOptions.debug. */
  debug?: (line: string) => void;
  /** A link cache to share (e.g. with the linker this one replaces); one sized by `config.cache` when absent. */
  cache?: LinkCache;
  /** A labelled-mention memory: a version directory, or a root whose `CURRENT` is polled and hot-swapped. */
  memoryDir?: string;
  /** How often a memory root's `CURRENT` is polled (default 1000 ms; 0: never). */
  memoryPollMs?: number;
  /** Reports, once, a memory version that could not be loaded (the old one keeps serving). */
  onMemoryError?: (error: Error, version: string | undefined) => void;
  /** Reports each memory version the linker swapped to (not the one it opened with). */
  onMemorySwap?: (version: string) => void;
  /**
   * The confidence calibration (cuilink calibrate): a file, `false` for none, or absent for the
   * shipped models/default/calibration.json when it was fit for the loaded models. A file given
   * here that was fit for other models is an error.
   */
  calibration?: string | false;
  /** Concepts (ids) the linker must never return: held-out-concept NIL evaluation (eval --hold-out). */
  excludeConcepts?: ReadonlySet<string>;
}

/** The shipped cross-encoder, found from the package root (not the working directory). */
export const DEFAULT_RERANKER_DIR = join(PACKAGE_ROOT, 'models', 'default', 'crossencoder');
/** The shipped confidence calibration, fit on the tune split for the shipped models. */
export const DEFAULT_CALIBRATION = join(PACKAGE_ROOT, 'models', 'default', 'calibration.json');
/** The shipped clinical abbreviation senses (config.query.abbreviationInventory). */
export const DEFAULT_ABBREVIATION_INVENTORY = join(PACKAGE_ROOT, 'models', 'default', 'abbreviations', 'clinical-senses.tsv');

/**
 * The bi-encoder directory an index manifest recorded: an absolute path as it is; a relative one
 * from the package root first (where `index build` records the shipped models from, see
 * recordedModelPath), else from the working directory. The checksum check catches a wrong pick.
 */
export function resolveRecordedModelDir(recorded: string): string {
  if (isAbsolute(recorded)) return recorded;
  const fromPackage = join(PACKAGE_ROOT, recorded);
  return existsSync(join(fromPackage, 'manifest.json')) ? fromPackage : recorded;
}

/**
 * Whether the linker will run each mention through its own pipeline (Linker.linkEachAlone):
 * models in int8 (the CPU default) whose dynamic quantization scales activations per batch tensor,
 * so that each mention runs alone. Per-token int8 models batch across notes instead.
 */
function pipelinesMentions(precision: Precision | undefined, manifests: readonly ModelManifest[]): boolean {
  return !manifests.every((m) => rowsIndependentOfBatch(m, precision ?? 'int8'));
}

/**
 * Intra-op threads per session when the two sessions run side by side: half the cores each (at
 * least 1, at most 4). On 2 cores, 1 + 1 pipelined linked the first pass 1.1× faster than 2 + 2
 * (bench/results/link.json).
 */
function sideBySideThreads(): number {
  return Math.max(1, Math.min(4, Math.floor(availableParallelism() / 2)));
}

/**
 * Opens the one linking core every entry point shares: the index, the bi-encoder it was built
 * with (checked by checksum), the optional cross-encoder, and the link options.
 */
export async function openLinker(options: OpenLinkerOptions): Promise<Linker> {
  const config = parseLinkConfig(options.config ?? {});
  const indexDir = resolveIndexDir(options.indexDir).dir;
  const index = await LinkIndex.open(indexDir, normalizeName, { efSearch: config.efSearch });
  const log = options.log ?? ((line: string) => process.stderr.write(`cuilink: ${line}\n`));
  // Still served (bench caches and older deployments hold such indexes), but never without a word.
  if (!index.filesVerified) log(`index ${indexDir} records no file checksums (built before they were): its files were checked for shape only, not for damage; rebuild it with \`cuilink index build\` to have them verified`);
  const modelDir = options.modelDir ?? resolveRecordedModelDir(index.manifest.model.path);
  const rerankerDir = options.rerankerDir === undefined ? (existsSync(join(DEFAULT_RERANKER_DIR, 'manifest.json')) ? DEFAULT_RERANKER_DIR : false) : options.rerankerDir;
  const withCross = rerankerDir !== false && config.rerank.policy !== 'never';
  const manifests = [readModelManifest(modelDir), ...(withCross ? [readModelManifest(rerankerDir)] : [])];
  const threads = options.threads ?? (withCross && pipelinesMentions(options.precision, manifests) ? sideBySideThreads() : undefined);
  const encoderOptions = { provider: options.provider ?? 'auto', deviceId: options.deviceId ?? 0, threads, precision: options.precision, log, debug: options.debug };
  const encoder = await BiEncoder.open(modelDir, encoderOptions);
  if (encoder.modelSha256 !== index.manifest.model.sha256) {
    await encoder.close();
    throw new InputError(`${modelDir} is not the model index ${indexDir} was built with (checksum ${encoder.modelSha256.slice(0, 12)} ≠ ${index.manifest.model.sha256.slice(0, 12)}); rebuild the index or pass --model`, 'MODEL_MISMATCH');
  }
  // Name vectors of another precision still match (cosine ≥ 0.977 int8 to fp32), but not exactly as the index was evaluated.
  if (index.manifest.model.precision !== encoder.precision) log(`index ${indexDir} holds ${index.manifest.model.precision} name vectors; mentions are encoded ${encoder.precision} here (--precision ${index.manifest.model.precision} matches them, or rebuild the index on this provider)`);
  // Never drop the reranker without a word: say which of the three reasons applies.
  if (rerankerDir === false) log(options.rerankerDir === false ? 'reranker: none (turned off)' : `reranker: none (${DEFAULT_RERANKER_DIR} has no manifest.json)`);
  else if (config.rerank.policy === 'never') log('reranker: none (rerank.policy is never)');
  let cross: CrossEncoder | undefined;
  try {
    cross = withCross ? await CrossEncoder.open(rerankerDir, encoderOptions) : undefined;
  } catch (error) {
    // The bi-encoder's worker thread is already up: left open it would keep the process from exiting.
    await encoder.close();
    throw error;
  }
  let calibrator: ConfidenceCalibrator | undefined;
  try {
    calibrator = openCalibration(options.calibration, { biEncoder: encoder.modelSha256, crossEncoder: cross?.modelSha256 ?? null }, log, cross && rerankerDir !== false ? rerankerDir : undefined);
  } catch (error) {
    await encoder.close();
    await cross?.close();
    throw error;
  }
  // Its probabilities hold for the link config it was fit under (files fit before 2026-11-28 do not record it).
  const fitted = calibrator?.file.fit.linkConfig;
  const differing = fitted === undefined ? [] : linkConfigDifferences(fitted, config);
  if (differing.length > 0) log(`confidence: the calibration was fit under another link config (${differing.slice(0, 5).join(', ')}${differing.length > 5 ? ', …' : ''}): its probabilities may be off; fit one under this config with cuilink calibrate --link-config`);
  // The calibration's own NIL thresholds, unless the link config names them.
  const configuredNil = options.config?.nil as Record<string, unknown> | undefined;
  if (configuredNil?.confidence === undefined && calibrator?.file.nilConfidence !== undefined) config.nil.confidence = calibrator.file.nilConfidence;
  if (configuredNil?.inKb === undefined && calibrator?.file.nilInKb !== undefined) config.nil.inKb = calibrator.file.nilInKb;
  let memory: MemoryWatcher | undefined;
  try {
    memory = options.memoryDir === undefined ? undefined : MemoryWatcher.open({ path: options.memoryDir, index, config: config.memory, normalize: normalizeName, modelSha256: encoder.modelSha256, pollMs: options.memoryPollMs, exclude: options.excludeConcepts, onError: options.onMemoryError, onSwap: options.onMemorySwap });
  } catch (error) {
    await encoder.close();
    await cross?.close();
    throw error;
  }
  const findAbbreviations: AbbreviationFinder = (text) => {
    const map = new Map<string, { longForm: string; start: number; end: number }>();
    for (const d of findAbbreviationDefinitions(text, { initials: config.query.abbreviationsInside })) if (!map.has(d.shortForm)) map.set(d.shortForm, { longForm: d.longForm, start: d.longFormStart, end: d.longFormEnd });
    return map;
  };
  // A model that reads the note puts what it reads into the cache key (the bi-encoder's query
  // already is the key; a cross-encoder's window is added), so a cached link is always the one
  // the models would give.
  const rerankReadsContext = cross !== undefined && !isContextFree(cross.manifest.query);
  const { cache: cacheLimits, ...linkSettings } = config;
  const modelKeyParts = {
    biEncoder: `${encoder.modelSha256}:${encoder.precision}:${encoder.provider}`,
    crossEncoder: cross ? `${cross.modelSha256}:${cross.precision}:${cross.provider}` : '',
    calibration: calibrator?.sha256 ?? '',
    excluded: options.excludeConcepts ? [...options.excludeConcepts].sort().join(',') : '',
  };
  const cache = options.cache ?? new LinkCache({ maxEntries: cacheLimits.maxEntries, maxBytes: cacheLimits.maxBytes });
  return new Linker({
    index,
    retriever: new CandidateRetriever(index),
    encoder,
    reranker: cross ? new Reranker(cross, { includeSemanticType: cross.manifest.candidate?.includeSemanticType ?? false }) : undefined,
    biEncoderQuery: (text, mention, override) => buildQuery(text, mention, encoder.manifest.query, override),
    rerankQuery: (text, mention, override) => buildQuery(text, mention, cross!.manifest.query, override),
    findAbbreviations,
    loose: needsLooseTable(config.query) ? new LooseMatchTable(index.concepts, looseKey, unqualifiedKey) : undefined,
    xrefNames: config.query.xrefNames ? xrefNameTable(index) : undefined,
    inventory: config.query.abbreviationInventory ? AbbreviationInventory.load(DEFAULT_ABBREVIATION_INVENTORY) : undefined,
    sparse: config.query.sparseWeight > 0 ? new SparseFusion(index.concepts, normalizeName, config.query.sparseWeight) : undefined,
    hierarchy: config.hierarchy.penalty > 0 ? new HierarchyPreference(index.concepts, (id) => index.indexOf(id), normalizeName, config.hierarchy) : undefined,
    calibrator,
    modelChecksums: { biEncoder: encoder.modelSha256, crossEncoder: cross?.modelSha256 ?? null },
    exclude: options.excludeConcepts,
    config,
    // Per-tensor dynamic int8 scales activations per batch: such models link each mention alone
    // (a link is then a function of what its models read, context included); fp16/fp32 rows and
    // per-token int8 rows do not interact, so their mentions share batches across notes.
    batchScope: encoder.batchIndependent && (cross?.batchIndependent ?? true) ? 'all' : 'mention',
    // Model checksums, precisions and providers too: the versions carry model ids only.
    memo: cache.enabled ? new LinkMemo(cache, linkSettings, () => modelKeyParts) : undefined,
    rerankReadsContext,
    exactVectors: new ExactNameVectors(index, normalizeName),
    memory,
    versions: {
      linkerVersion: LINKER_VERSION,
      modelVersion: cross ? `${encoder.modelId}+${cross.modelId}` : encoder.modelId,
      indexVersion: index.manifest.indexVersion,
    },
    release: async () => {
      memory?.close();
      await encoder.close();
      await cross?.close();
    },
  });
}

/**
 * The calibration to use: an explicit file must fit the loaded models (else an error). Without
 * one: the shipped default when it fits, else a `calibration.json` beside the loaded
 * cross-encoder when that fits (an opt-in reranker ships its own), and the log says when none does.
 */
function openCalibration(choice: string | false | undefined, models: { biEncoder: string; crossEncoder: string | null }, log: (line: string) => void, rerankerDir: string | undefined): ConfidenceCalibrator | undefined {
  if (choice === false) return undefined;
  if (choice !== undefined) {
    const calibrator = ConfidenceCalibrator.load(choice);
    const mismatch = calibrator.mismatch(models);
    if (mismatch === undefined) return calibrator;
    throw new InputError(`calibration ${choice} does not fit the loaded models: ${mismatch}; fit one with cuilink calibrate or pass --calibration none`, 'CALIBRATION_MISMATCH');
  }
  const files = [DEFAULT_CALIBRATION, ...(rerankerDir === undefined ? [] : [join(rerankerDir, 'calibration.json')])].filter((file) => existsSync(file));
  if (files.length === 0) {
    log(`confidence: none (${DEFAULT_CALIBRATION} is missing)`);
    return undefined;
  }
  let mismatch = '';
  for (const file of files) {
    const calibrator = ConfidenceCalibrator.load(file);
    const why = calibrator.mismatch(models);
    if (why === undefined) return calibrator;
    mismatch ||= why;
  }
  log(`confidence: none (the shipped calibration does not fit these models: ${mismatch}; fit one with cuilink calibrate)`);
  return undefined;
}

/** The index's names from other vocabularies, or undefined when it has none. */
function xrefNameTable(index: LinkIndex): XrefNameTable | undefined {
  const table = new XrefNameTable(index.concepts, (name) => index.exact.lookup(name).length > 0, normalizeName, looseKey);
  return table.empty ? undefined : table;
}
