import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../kb/errors.ts';
import { isObject } from '../kb/safe-json.ts';
import { parseLinkConfig } from '../link/link-config.ts';
import { resolveMemoryDir } from '../retrieve/memory-root.ts';
import { ENCODER_FLAG_OPTIONS, ENCODER_FLAGS_HELP, encoderRequest } from './encoder-flags.ts';
import type { OpenLinkerOptions } from '../link/open-linker.ts';
import { DEFAULT_MODEL_DIR, defaultCacheDir, defaultIndexDir } from '../link/default-index.ts';

/** The flags that choose and tune the linking core, shared by `link`, `eval` and `run`. */
export const LINKER_FLAG_OPTIONS = {
  ...ENCODER_FLAG_OPTIONS,
  index: { type: 'string' },
  model: { type: 'string' },
  reranker: { type: 'string' },
  'link-config': { type: 'string' },
  memory: { type: 'string' },
  calibration: { type: 'string' },
} as const;

/** The model and link-config flags; every link-config key is named (test/unit/cli/shared-flags-help.test.ts). */
export const MODEL_FLAGS_HELP = `  --model DIR           bi-encoder directory (default: the one the index was built with)
  --reranker DIR|none   cross-encoder directory (default models/default/crossencoder when present)
  --link-config FILE    JSON link options (src/link/link-config.ts; README "Command line"): topK,
                        retrieveK, efSearch, rerank {policy, candidates, margin, weight, prune,
                        repeatWindow}, nil {threshold, confidence, inKb}, typeFilter {label: [types]},
                        abbreviations, exactVectors, query {loose, sparseWeight, …}, hierarchy {…},
                        cache {maxEntries, maxBytes}, memory {minSupport, majority, kbVotes, …}`;

const MEMORY_AND_CALIBRATION_FLAGS_HELP = `  --memory ROOT|DIR     labelled-mention memory (cuilink memory add); a root's CURRENT is polled
  --calibration FILE|none  confidence calibration (cuilink calibrate); default models/default/calibration.json
                        when it was fit for the loaded models, else the cross-encoder directory's own
                        calibration.json when that was (else confidence is null, and said so)`;

export const LINKER_FLAGS_HELP = `${MODEL_FLAGS_HELP}
${MEMORY_AND_CALIBRATION_FLAGS_HELP}
${ENCODER_FLAGS_HELP}`;

interface LinkerFlagValues {
  index?: string;
  model?: string;
  reranker?: string;
  'link-config'?: string;
  memory?: string;
  calibration?: string;
  provider?: string;
  'device-id'?: string;
  threads?: string;
}

function readJsonFile(file: string, flag: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(`--${flag}: cannot read ${file}: ${(error as Error).message}`, 'BAD_FLAGS', error);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InputError(`--${flag}: ${file} is not JSON: ${(error as Error).message}`, 'BAD_FLAGS', error);
  }
  // `null` would read as "no config": the defaults, while the user believes the file was used.
  if (!isObject(value)) throw new InputError(`--${flag} ${file}: must hold a JSON object, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`, 'BAD_CONFIG');
  return value;
}

/** The --link-config file's options, checked now (naming the file and the key), before anything is loaded. */
function readLinkConfigFile(file: string): Record<string, unknown> {
  const config = readJsonFile(file, 'link-config');
  parseLinkConfig(config, `--link-config ${file}`);
  return config;
}

/** openLinker options from the flags; the index directory is filled in by the caller when absent. */
export function linkerRequest(values: LinkerFlagValues): Omit<OpenLinkerOptions, 'indexDir'> & { indexDir?: string } {
  return {
    indexDir: values.index,
    modelDir: values.model,
    rerankerDir: values.reranker === undefined ? undefined : values.reranker === 'none' ? false : values.reranker,
    memoryDir: values.memory,
    calibration: values.calibration === undefined ? undefined : values.calibration === 'none' ? false : values.calibration,
    config: values['link-config'] === undefined ? undefined : readLinkConfigFile(values['link-config']),
    ...encoderRequest(values),
  };
}

/**
 * For a one-shot command (`link`, `eval`): refuses a --memory that names no memory. The linker
 * treats such a path as a root nothing was learned into yet, which suits `run` (the updater may
 * create it later) but would make a one-shot run link without the memory and not say so.
 */
export function requireMemory(values: { memory?: string }): void {
  const path = values.memory;
  if (path === undefined) return;
  if (!existsSync(path)) throw new InputError(`--memory ${path}: no such memory root or version directory (cuilink memory add creates one)`, 'BAD_FLAGS');
  try {
    resolveMemoryDir(path);
  } catch (error) {
    if (error instanceof InputError) throw new InputError(`--memory ${error.message}`, 'BAD_FLAGS', error);
    throw error;
  }
}

/**
 * `--index` where a command scores against the index's KB (`eval`): no default, as the KB is the
 * question, but the refusal says where the default index of `cuilink link` is and how to pass it.
 */
export function requireIndexFlag(value: string | undefined, command: string): string {
  if (value !== undefined && value.length > 0) return value;
  let where: string;
  try {
    const dir = defaultIndexDir(defaultCacheDir(), DEFAULT_MODEL_DIR);
    const built = existsSync(join(dir, 'manifest.json'));
    where = `the default HPO index that 'cuilink link' uses without --index is ${dir}${built ? '' : " (not built yet: the first 'cuilink link' or 'cuilink run' without --index builds it)"}; to ${command} on it, pass --index ${dir}`;
  } catch {
    // No default model to name the index by: say where indexes are cached instead.
    where = `the default HPO index is cached under ${join(defaultCacheDir(), 'indexes')}`;
  }
  throw new InputError(`missing required flag --index: ${command} reads the KB of the index it is given, so it has no default; ${where}`, 'BAD_FLAGS');
}
