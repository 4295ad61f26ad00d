import { parseNumberFlag } from './args.ts';
import { loadStageConfig, type StageConfig } from '../stream/stage-config.ts';

/** The stage flags `run` and `demo` share: --config, then CUILINK_* variables, then --index and --http-port. */
export function stageConfigFromFlags(values: { config?: string; index?: string; 'http-port'?: string }): StageConfig {
  const overrides: Record<string, unknown> = {};
  if (values.index !== undefined) overrides['linker.indexDir'] = values.index;
  if (values['http-port'] !== undefined) overrides['http.port'] = parseNumberFlag(values['http-port'], 'http-port', 8080, { min: 0, max: 65535, integer: true });
  return loadStageConfig({ file: values.config, overrides });
}
