import { readFileSync } from 'node:fs';
import { InputError } from '../kb/errors.ts';
import { ENCODER_FLAG_OPTIONS, ENCODER_FLAGS_HELP, encoderRequest } from './encoder-flags.ts';
import type { OpenLinkerOptions } from '../link/open-linker.ts';

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

export const LINKER_FLAGS_HELP = `  --model DIR           bi-encoder directory (default: the one the index was built with)
  --reranker DIR|none   cross-encoder directory (default models/default/crossencoder when present)
  --link-config FILE    JSON link options: topK, retrieveK, efSearch, rerank {policy, candidates,
                        margin, weight}, nil {threshold, confidence, inKb}, typeFilter {label: [types]}, abbreviations,
                        memory {minSupport, majority, kbVotes, neighbors, denseThreshold, …}
  --memory ROOT|DIR     labelled-mention memory (cuilink memory add); a root's CURRENT is polled
  --calibration FILE|none  confidence calibration (cuilink calibrate); default models/default/calibration.json
                        when it was fit for the loaded models, else the cross-encoder directory's own
                        calibration.json when that was (else confidence is null, and said so)
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
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new InputError(`--${flag}: ${file} is not JSON: ${(error as Error).message}`, 'BAD_FLAGS', error);
  }
}

/** openLinker options from the flags; the index directory is filled in by the caller when absent. */
export function linkerRequest(values: LinkerFlagValues): Omit<OpenLinkerOptions, 'indexDir'> & { indexDir?: string } {
  return {
    indexDir: values.index,
    modelDir: values.model,
    rerankerDir: values.reranker === undefined ? undefined : values.reranker === 'none' ? false : values.reranker,
    memoryDir: values.memory,
    calibration: values.calibration === undefined ? undefined : values.calibration === 'none' ? false : values.calibration,
    config: values['link-config'] === undefined ? undefined : readJsonFile(values['link-config'], 'link-config'),
    ...encoderRequest(values),
  };
}
