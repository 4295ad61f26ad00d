import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../kb/errors.ts';
import { BiEncoder } from '../encode/bi-encoder.ts';
import { CrossEncoder } from '../encode/cross-encoder.ts';
import type { ProviderChoice } from '../encode/execution-provider.ts';
import type { Precision } from '../encode/manifest.ts';
import { buildQuery } from '../text/context-window.ts';
import { findAbbreviationDefinitions } from '../text/abbreviations.ts';
import { normalizeName } from '../text/normalize.ts';
import { CandidateRetriever } from '../retrieve/candidate-retriever.ts';
import { LinkIndex } from '../retrieve/link-index.ts';
import { LooseMatchTable } from '../retrieve/loose-match-table.ts';
import { SparseFusion } from '../retrieve/sparse-fusion.ts';
import { looseKey } from '../text/loose-key.ts';
import { AbbreviationInventory } from '../text/abbreviation-inventory.ts';
import { HierarchyPreference } from './hierarchy-preference.ts';
import { resolveIndexDir } from '../retrieve/index-versions.ts';
import { Reranker } from '../rerank/reranker.ts';
import { parseLinkConfig } from './link-config.ts';
import { Linker, type AbbreviationFinder } from './linker.ts';
import { LINKER_VERSION } from './version.ts';

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
}

export const DEFAULT_RERANKER_DIR = join('models', 'default', 'crossencoder');
/** The shipped clinical abbreviation senses (config.query.abbreviationInventory). */
export const DEFAULT_ABBREVIATION_INVENTORY = join('models', 'default', 'abbreviations', 'clinical-senses.tsv');

/** The reranker's own settings (its manifest's `rerank`) under whatever the link config sets. */
export function withRerankDefaults(config: Record<string, unknown>, defaults: Record<string, unknown>): Record<string, unknown> {
  const given = config['rerank'];
  return { ...config, rerank: { ...defaults, ...(typeof given === 'object' && given !== null ? given : {}) } };
}

/**
 * Opens the one linking core every entry point shares: the index, the bi-encoder it was built
 * with (checked by checksum), the optional cross-encoder, and the link options.
 */
export async function openLinker(options: OpenLinkerOptions): Promise<Linker> {
  let config = parseLinkConfig(options.config ?? {});
  const indexDir = resolveIndexDir(options.indexDir).dir;
  const index = await LinkIndex.open(indexDir, normalizeName, { efSearch: config.efSearch });
  const modelDir = options.modelDir ?? index.manifest.model.path;
  const encoderOptions = { provider: options.provider ?? 'auto', deviceId: options.deviceId ?? 0, threads: options.threads, precision: options.precision };
  const encoder = await BiEncoder.open(modelDir, encoderOptions);
  if (encoder.modelSha256 !== index.manifest.model.sha256) {
    await encoder.close();
    throw new InputError(`${modelDir} is not the model index ${indexDir} was built with (checksum ${encoder.modelSha256.slice(0, 12)} ≠ ${index.manifest.model.sha256.slice(0, 12)}); rebuild the index or pass --model`, 'MODEL_MISMATCH');
  }
  const rerankerDir = options.rerankerDir === undefined ? (existsSync(join(DEFAULT_RERANKER_DIR, 'manifest.json')) ? DEFAULT_RERANKER_DIR : false) : options.rerankerDir;
  const cross = rerankerDir === false || config.rerank.policy === 'never' ? undefined : await CrossEncoder.open(rerankerDir, encoderOptions);
  if (cross?.manifest.rerank) config = parseLinkConfig(withRerankDefaults(options.config ?? {}, cross.manifest.rerank));
  const findAbbreviations: AbbreviationFinder = (text) => {
    const map = new Map<string, { longForm: string; start: number; end: number }>();
    for (const d of findAbbreviationDefinitions(text, { initials: config.query.abbreviationsInside })) if (!map.has(d.shortForm)) map.set(d.shortForm, { longForm: d.longForm, start: d.longFormStart, end: d.longFormEnd });
    return map;
  };
  return new Linker({
    index,
    retriever: new CandidateRetriever(index),
    encoder,
    reranker: cross ? new Reranker(cross, { includeSemanticType: cross.manifest.candidate?.includeSemanticType ?? false }) : undefined,
    biEncoderQuery: (text, mention, override) => buildQuery(text, mention, encoder.manifest.query, override),
    rerankQuery: (text, mention, override) => buildQuery(text, mention, cross!.manifest.query, override),
    findAbbreviations,
    loose: config.query.loose ? new LooseMatchTable(index.concepts, looseKey) : undefined,
    inventory: config.query.abbreviationInventory ? AbbreviationInventory.load(DEFAULT_ABBREVIATION_INVENTORY) : undefined,
    sparse: config.query.sparseWeight > 0 ? new SparseFusion(index.concepts, normalizeName, config.query.sparseWeight) : undefined,
    hierarchy: config.hierarchy.penalty > 0 ? new HierarchyPreference(index.concepts, (id) => index.indexOf(id), normalizeName, config.hierarchy) : undefined,
    config,
    versions: {
      linkerVersion: LINKER_VERSION,
      modelVersion: cross ? `${encoder.modelId}+${cross.modelId}` : encoder.modelId,
      indexVersion: index.manifest.indexVersion,
    },
    release: async () => {
      await encoder.close();
      await cross?.close();
    },
  });
}
