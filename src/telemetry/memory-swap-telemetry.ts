import { metrics, type Counter, type Meter } from '@opentelemetry/api';
import type { Logger } from './logger.ts';

export interface MemorySwapCounts {
  swaps: number;
  loadFailures: number;
  loadFailuresByCode: Record<string, number>;
}

/** Codes a failed memory load reports (the watcher's errors; MEMORY_LOAD for one without a code): series at 0 from start. */
export const MEMORY_LOAD_FAILURE_CODES = ['BAD_MEMORY', 'BAD_INDEX', 'MODEL_MISMATCH', 'MEMORY_LOAD'] as const;

/**
 * The sequence number a memory version's name starts with (`000007-3fa1c2d9e0` → 7); 0 for another
 * name, and for digits past what a number holds (a name no updater writes: read from a record, its
 * Infinity would come back from a JSON state file as null).
 */
export function memorySequence(version: string): number {
  const match = /^(\d+)-/.exec(version);
  const sequence = match ? Number(match[1]) : 0;
  return Number.isFinite(sequence) ? sequence : 0;
}

/**
 * What the stage says about its labelled-mention memory (src/link/memory-watcher.ts swaps it
 * without a restart): one log line per swap and per version that could not be loaded, counters of
 * both, and the version now served as a gauge. Only version names and error codes, never label
 * or note text. Without it a swap was silent: nothing told an operator which memory linked what.
 */
export class MemorySwapTelemetry {
  readonly counts: MemorySwapCounts = { swaps: 0, loadFailures: 0, loadFailuresByCode: {} };
  private readonly logger: Logger;
  private readonly serving: () => string | null | undefined;
  private readonly swaps: Counter;
  private readonly failures: Counter;

  /** `serving`: the version the linker serves now (its `versions.memoryVersion`), read at collection. */
  constructor(logger: Logger, serving: () => string | null | undefined, meter: Meter = metrics.getMeter('cuilink.stream')) {
    this.logger = logger;
    this.serving = serving;
    this.swaps = meter.createCounter('cuilink.stream.memory.swaps', { description: 'Memory versions the linker swapped to while running' });
    this.failures = meter.createCounter('cuilink.stream.memory.load_failures', { description: 'Memory versions that could not be loaded (the previous one kept serving), by error code' });
    // Series at 0 from start, so that increase() alerts see the first swap or failure after a restart.
    this.swaps.add(0);
    for (const code of MEMORY_LOAD_FAILURE_CODES) this.failures.add(0, { code });
    // The sequence as the value, not the name as an attribute: the SDK keeps exporting every
    // attribute set an observable gauge once reported, so each old version would live on as a series.
    const sequence = meter.createObservableGauge('cuilink.stream.memory.sequence', { description: 'Sequence number of the memory version served (000007-… → 7; the log names each swap in full); absent without a memory' });
    sequence.addCallback((result) => {
      const version = this.serving();
      if (version) result.observe(memorySequence(version));
    });
  }

  swapped(version: string): void {
    this.counts.swaps++;
    this.swaps.add(1);
    this.logger.info('memory swapped', { memoryVersion: version });
  }

  /** `version`: the one that failed (undefined when the memory root's CURRENT could not be read). */
  failed(error: Error, version: string | undefined): void {
    const code = (error as { code?: unknown }).code;
    const known = typeof code === 'string' && (MEMORY_LOAD_FAILURE_CODES as readonly string[]).includes(code) ? code : 'MEMORY_LOAD';
    this.counts.loadFailures++;
    this.counts.loadFailuresByCode[known] = (this.counts.loadFailuresByCode[known] ?? 0) + 1;
    this.failures.add(1, { code: known });
    this.logger.warn('memory version not loaded; the previous one keeps serving', { memoryVersion: version ?? null, servingVersion: this.serving() ?? null, code: known });
  }
}
