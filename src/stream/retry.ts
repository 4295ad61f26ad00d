import { setTimeout as sleep } from 'node:timers/promises';

export interface RetryOptions {
  maxAttempts: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** Called before each wait; `attempt` is the one that failed (1-based). */
  onRetry?: (error: unknown, attempt: number, waitMs: number) => void;
  /** Stops retrying (the last error is thrown) once this says so, e.g. on shutdown. */
  shouldStop?: () => boolean;
}

/**
 * Whether an error is worth retrying: kafkajs errors and CuilinkError both carry `retriable`
 * (broker unavailable, leader moved, request timeout, encoder busy); everything else is not.
 */
export function isRetriable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { retriable?: unknown }).retriable === true;
}

/** Runs `operation`, retrying retriable failures with exponential backoff and full jitter. */
export async function withRetry<T>(operation: () => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (!isRetriable(error) || attempt >= options.maxAttempts || options.shouldStop?.()) throw error;
      const ceiling = Math.min(options.maxBackoffMs, options.initialBackoffMs * 2 ** (attempt - 1));
      const waitMs = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
      options.onRetry?.(error, attempt, waitMs);
      await sleep(waitMs);
    }
  }
}
