import { parseNumberFlag } from './args.ts';
import { InputError } from '../kb/errors.ts';
import { PROVIDER_CHOICES, type ProviderChoice } from '../encode/execution-provider.ts';
import type { Precision } from '../encode/manifest.ts';

const PRECISIONS: readonly Precision[] = ['int8', 'fp16', 'fp32'];

/** The execution-provider flags shared by every command that runs a model. */
export const ENCODER_FLAG_OPTIONS = {
  provider: { type: 'string' },
  'device-id': { type: 'string' },
  threads: { type: 'string' },
  precision: { type: 'string' },
} as const;

export const ENCODER_FLAGS_HELP = `  --provider P          auto|cuda|cpu (default: CUILINK_PROVIDER, else auto: CUDA when its provider
                        loads, else CPU, logged)
  --device-id N         CUDA device (default 0)
  --threads N           intra-op threads per ONNX session (default: cores, at most 4; half each
                        when both int8 models run side by side, as by default)
  --precision P         int8|fp16|fp32 model file (default: CUILINK_PRECISION, else int8 on the CPU,
                        fp16 on CUDA)`;

/** The flag's value, else the variable's (CUILINK_PRECISION, CUILINK_PROVIDER): one of `choices`, the error naming whichever gave it. */
function choiceOf<T extends string>(flag: string, value: string | undefined, variable: string, choices: readonly T[]): T | undefined {
  const chosen = value ?? process.env[variable];
  if (chosen === undefined || (choices as readonly string[]).includes(chosen)) return chosen as T | undefined;
  throw new InputError(`${value !== undefined ? `--${flag}` : `environment variable ${variable}`} must be one of ${choices.join(', ')}, got '${chosen}'`, 'BAD_FLAGS');
}

export function encoderRequest(values: { provider?: string; 'device-id'?: string; threads?: string; precision?: string }): { provider: ProviderChoice; deviceId: number; threads: number | undefined; precision: Precision | undefined } {
  return {
    precision: choiceOf('precision', values.precision, 'CUILINK_PRECISION', PRECISIONS),
    provider: choiceOf('provider', values.provider, 'CUILINK_PROVIDER', PROVIDER_CHOICES) ?? 'auto',
    deviceId: parseNumberFlag(values['device-id'], 'device-id', 0, { min: 0, integer: true }),
    threads: values.threads === undefined ? undefined : parseNumberFlag(values.threads, 'threads', 1, { min: 1, max: 256, integer: true }),
  };
}
