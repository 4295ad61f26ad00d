import type { LinkingCore, NoteInput } from '../link/types.ts';
import type { Logger } from '../telemetry/logger.ts';
import { codeOf } from './note-batch-linker.ts';
import { isRetriable } from './retry.ts';

export interface LinkerHealthProbeOptions {
  /** One probe: resolves when the linker works, rejects with why it does not (`linkerCheck(core)`). */
  check: () => Promise<void>;
  logger: Logger;
  /** Time between probes (default 30 s); the first runs at start(). */
  intervalMs?: number;
  /** A probe that has not answered by then failed (default 60 s: it may queue behind linking batches). */
  timeoutMs?: number;
  /**
   * Consecutive retriable failures or timeouts (a worker being restarted, a slow run) before the
   * linker counts as unhealthy (default 3). A non-retriable failure (ENCODER_FAILED,
   * INFERENCE_FAILED, a plain Error) makes it unhealthy at once.
   */
  maxTransientFailures?: number;
}

export type LinkerHealthListener = (healthy: boolean, error: unknown) => void;

/** What a probe failed with when it did not answer within `timeoutMs`. */
export class ProbeTimeoutError extends Error {
  readonly code = 'PROBE_TIMEOUT';
  readonly retriable = true;

  constructor(timeoutMs: number) {
    super(`the linker did not answer a health probe within ${timeoutMs} ms`);
    this.name = 'ProbeTimeoutError';
  }
}

/**
 * Probes the linking core every `intervalMs`, so that an encoder that gave up after its restarts
 * (or a model that throws on every call) is seen on an idle stream too, not only when a note
 * arrives (issue #27). Logs once at error level when the linker turns unhealthy and once at info
 * when it answers again; `healthy` is for /healthz and /readyz, `onChange` for the stage (stop,
 * metric). Probes never overlap; the timer does not keep the process alive.
 */
export class LinkerHealthProbe {
  private readonly check: () => Promise<void>;
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private readonly maxTransientFailures: number;
  private readonly listeners: LinkerHealthListener[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<boolean> | undefined;
  private transientFailures = 0;
  private isHealthy = true;
  private failure: unknown;

  constructor(options: LinkerHealthProbeOptions) {
    this.check = options.check;
    this.logger = options.logger;
    this.intervalMs = options.intervalMs ?? 30_000;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxTransientFailures = options.maxTransientFailures ?? 3;
  }

  /** False from a non-retriable probe failure, or `maxTransientFailures` in a row, until a probe answers. */
  get healthy(): boolean {
    return this.isHealthy;
  }

  /** The failure that made the linker unhealthy; undefined while healthy. */
  get error(): unknown {
    return this.isHealthy ? undefined : this.failure;
  }

  /** Probes now and then every `intervalMs` until stop(). Idempotent. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.probeNow(), this.intervalMs);
    this.timer.unref();
    void this.probeNow();
  }

  /** Stops probing (before the linker is closed: a closed linker fails its probes). */
  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One probe (or the one in progress); resolves to `healthy` after it. Never rejects. */
  probeNow(): Promise<boolean> {
    this.running ??= this.probeOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  /** `listener(healthy, error)` on every change of `healthy`; returns a function that removes it. */
  onChange(listener: LinkerHealthListener): () => void {
    this.listeners.push(listener);
    return () => {
      const at = this.listeners.indexOf(listener);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  private async probeOnce(): Promise<boolean> {
    let timeout: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        Promise.resolve().then(this.check),
        new Promise<never>((_, reject) => {
          timeout = setTimeout(() => reject(new ProbeTimeoutError(this.timeoutMs)), this.timeoutMs);
          timeout.unref();
        }),
      ]);
      this.transientFailures = 0;
      if (!this.isHealthy) {
        this.logger.info('linker health probe answers again: linker healthy', { after: codeOf(this.failure) });
        this.set(true, undefined);
      }
    } catch (error) {
      const transient = isRetriable(error);
      if (transient) this.transientFailures++;
      if (this.isHealthy && (!transient || this.transientFailures >= this.maxTransientFailures)) {
        this.logger.error('linker health probe failed: linker unhealthy', { code: codeOf(error), error, ...(transient ? { consecutiveFailures: this.transientFailures } : {}) });
        this.set(false, error);
      } else if (this.isHealthy) {
        this.logger.warn('linker health probe failed; probing again', { code: codeOf(error), consecutiveFailures: this.transientFailures, of: this.maxTransientFailures });
      }
    } finally {
      clearTimeout(timeout);
    }
    return this.isHealthy;
  }

  private set(healthy: boolean, error: unknown): void {
    this.isHealthy = healthy;
    this.failure = error;
    for (const listener of [...this.listeners]) listener(healthy, error);
  }
}

/** The note linkNotes is probed with when a core has no probe(): one short mention, no PHI. */
export const PROBE_NOTE: NoteInput = { noteId: 'cuilink-health-probe', text: 'fever', mentions: [{ id: 'probe', start: 0, end: 5, text: 'fever', label: '' }] };

/** The probe of a linking core: its probe() when it has one (Linker does), else linkNotes of PROBE_NOTE. */
export function linkerCheck(core: LinkingCore): () => Promise<void> {
  if (core.probe) return () => core.probe!();
  return async () => {
    await core.linkNotes([PROBE_NOTE]);
  };
}
