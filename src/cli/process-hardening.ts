import { createLogger, type Logger } from '../telemetry/logger.ts';

/** Set to `1` to keep Node's SIGUSR1 → inspector activation in `cuilink run` (debugging only). */
export const INSPECTOR_ENV = 'CUILINK_INSPECTOR';

/** Whether this process's SIGUSR1 listener is in place. */
let installed = false;

export interface HardenOptions {
  env?: NodeJS.ProcessEnv;
  /** Where a refused SIGUSR1 is reported; a JSON-line logger on stderr by default. */
  logger?: Pick<Logger, 'warn'>;
}

/**
 * Turns off Node's SIGUSR1 inspector activation for the stage process (issue #27): by default
 * SIGUSR1 makes Node open a debugger on 127.0.0.1:9229, through which anything that can reach the
 * port runs code in the process that holds the notes (PHI). Node 20 has no switch for that
 * (`--disable-sigusr1` came with Node 22.14 / 23.7), but a `process.on('SIGUSR1')` listener takes
 * the signal over from the inspector; this one only logs that the signal was refused. An operator
 * who needs the inspector sets CUILINK_INSPECTOR=1 (or starts Node with --inspect). The listener
 * stays for the life of the process (removing it would leave SIGUSR1 to its default action, which
 * ends the process). Returns whether SIGUSR1 is now refused. Idempotent.
 */
export function disableInspectorSignal(options: HardenOptions = {}): boolean {
  const env = options.env ?? process.env;
  if (env[INSPECTOR_ENV] === '1') return false;
  if (installed) return true;
  installed = true;
  const logger = options.logger ?? createLogger({ level: 'warn', fields: { service: 'cuilink' } });
  process.on('SIGUSR1', () => {
    logger.warn('SIGUSR1 refused: the inspector is off in this process', { enableWith: `${INSPECTOR_ENV}=1` });
  });
  return true;
}
