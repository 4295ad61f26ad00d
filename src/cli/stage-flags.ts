import { parseNumberFlag } from './args.ts';
import { loadStageConfig, type StageConfig } from '../stream/stage-config.ts';

/**
 * The stage flags `run` and `demo` share: --config, then CUILINK_* variables, then --index, --memory,
 * --calibration and --http-port. `defaults`: the command's own, under all of them (the demo's review topic).
 */
export function stageConfigFromFlags(values: { config?: string; index?: string; memory?: string; calibration?: string; 'http-port'?: string }, defaults?: Record<string, unknown>): StageConfig {
  const overrides: Record<string, unknown> = {};
  if (values.index !== undefined) overrides['linker.indexDir'] = values.index;
  if (values.memory !== undefined) overrides['linker.memoryDir'] = values.memory;
  if (values.calibration !== undefined) overrides['linker.calibration'] = values.calibration === 'none' ? false : values.calibration;
  if (values['http-port'] !== undefined) overrides['http.port'] = parseNumberFlag(values['http-port'], 'http-port', 8080, { min: 0, max: 65535, integer: true });
  return loadStageConfig({ file: values.config, overrides, defaults });
}
