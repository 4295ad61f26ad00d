import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { CuilinkError } from '../kb/errors.ts';

/** `auto`: CUDA when its provider loads, the CPU otherwise (logged); `cuda`: CUDA or an error. */
export type ProviderChoice = 'auto' | 'cuda' | 'cpu';
export const PROVIDER_CHOICES: readonly ProviderChoice[] = ['auto', 'cuda', 'cpu'];

export const CUDA_PROVIDER_LIBRARY = 'libonnxruntime_providers_cuda.so';

/** Where onnxruntime-node looks for its native libraries, execution-provider plug-ins included. */
export function onnxRuntimeLibraryDir(): string {
  const require = createRequire(import.meta.url);
  const packageDir = dirname(require.resolve('onnxruntime-node/package.json'));
  return join(packageDir, 'bin', 'napi-v6', process.platform, process.arch);
}

/** Why CUDA cannot be tried at all, or undefined when its provider library is installed. */
export function cudaProviderMissing(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return `the CUDA provider is only packaged for linux-x64 (this is ${process.platform}-${process.arch})`;
  const dir = onnxRuntimeLibraryDir();
  for (const lib of [CUDA_PROVIDER_LIBRARY, 'libonnxruntime_providers_shared.so']) {
    if (!existsSync(join(dir, lib))) return `${lib} is not installed in ${dir} (install it with 'npm run gpu:install-provider', see docs/gpu.md)`;
  }
  return undefined;
}

/** The CUDA 13 libraries the 1.29 provider links against; onnxruntime itself only says "failed to load". */
const CUDA_RUNTIME_LIBRARIES = ['libcudart.so.13', 'libcublas.so.13', 'libcublasLt.so.13', 'libcurand.so.10', 'libcufft.so.12', 'libcudnn.so.9'];

/** CUDA runtime libraries neither the loader cache nor LD_LIBRARY_PATH provides. */
export function missingCudaLibraries(): string[] {
  let cache = '';
  try {
    cache = execFileSync('ldconfig', ['-p'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    // No ldconfig: only LD_LIBRARY_PATH can be checked.
  }
  const dirs = (process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean);
  return CUDA_RUNTIME_LIBRARIES.filter((lib) => !cache.includes(lib) && !dirs.some((dir) => existsSync(join(dir, lib))));
}

export function parseProviderChoice(value: string | undefined, fallback: ProviderChoice = 'auto'): ProviderChoice {
  if (value === undefined) return fallback;
  if ((PROVIDER_CHOICES as readonly string[]).includes(value)) return value as ProviderChoice;
  throw new CuilinkError('BAD_FLAGS', `provider must be one of ${PROVIDER_CHOICES.join(', ')}, got '${value}'`);
}

export class CudaUnavailableError extends CuilinkError {
  constructor(reason: string, cause?: unknown) {
    super('CUDA_UNAVAILABLE', `CUDA was requested but cannot be used: ${reason}`, { retriable: false, cause });
    this.name = 'CudaUnavailableError';
  }
}
