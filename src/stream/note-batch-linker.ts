import { SpanStatusCode, trace, type Link, type SpanContext, type Tracer } from '@opentelemetry/api';
import { CuilinkError } from '../kb/errors.ts';
import type { LinkedNote, LinkingCore, NoteInput } from '../link/types.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { StageMetrics } from '../telemetry/stage-metrics.ts';
import { isRetriable, withRetry, type RetryOptions } from './retry.ts';

/** A validated note waiting for a linking batch, with the trace context its record carried. */
export interface QueuedNote {
  note: NoteInput;
  mentionCount: number;
  recordContext?: SpanContext;
}

/** A note's fate: linked (with the batch span that linked it), or a non-retriable error. */
export type NoteOutcome = { kind: 'linked'; linked: LinkedNote; batchContext: SpanContext } | { kind: 'failed'; error: CuilinkError };

/**
 * Codes of internal faults: the linker itself is broken (its encoder could not be kept running,
 * or it was closed). They are never a note's fault, so never dead-lettered: the stage stops
 * without committing and exits non-zero, and a restarted process links the records.
 */
export const INTERNAL_FAULT_CODES: ReadonlySet<string> = new Set(['ENCODER_FAILED', 'ENCODER_CLOSED']);

export function isInternalFault(error: unknown): boolean {
  return INTERNAL_FAULT_CODES.has(codeOf(error));
}

/**
 * The stage's batch processor: one LinkingCore call per micro-batch under a `cuilink.stream.batch`
 * span linked to each record's incoming trace context; the linker's encode / retrieve / rerank
 * spans become its children. Retriable failures are retried with backoff and then rethrown (the
 * records stay uncommitted); a non-retriable failure is narrowed down to the notes that cause it,
 * which are dead-lettered while the rest of the batch goes through. Internal faults
 * (INTERNAL_FAULT_CODES) are never narrowed down nor dead-lettered: they are reported to
 * `onFatal` and rethrown, so no offset is committed.
 */
export class NoteBatchLinker {
  /** False from a failed linking attempt (retriable or internal) until the next success: /readyz. */
  available = true;
  private readonly fatalListeners: ((error: unknown) => void)[] = [];

  constructor(
    private readonly linker: LinkingCore,
    private readonly tracer: Tracer,
    private readonly metrics: StageMetrics,
    private readonly retry: RetryOptions,
    private readonly logger: Logger,
  ) {}

  onFatal(listener: (error: unknown) => void): void {
    this.fatalListeners.push(listener);
  }

  link(items: QueuedNote[]): Promise<NoteOutcome[]> {
    const mentions = items.reduce((sum, i) => sum + i.mentionCount, 0);
    const links: Link[] = items.flatMap((i) => (i.recordContext ? [{ context: i.recordContext }] : []));
    const attributes = { 'cuilink.notes': items.length, 'cuilink.mentions': mentions };
    return this.tracer.startActiveSpan('cuilink.stream.batch', { root: true, links, attributes }, async (span): Promise<NoteOutcome[]> => {
      const started = performance.now();
      try {
        const batchContext = span.spanContext();
        try {
          const linked = await this.linkWithRetry(items.map((i) => i.note));
          return linked.map((note): NoteOutcome => ({ kind: 'linked', linked: note, batchContext }));
        } catch (error) {
          if (isRetriable(error) || isInternalFault(error) || items.length === 1) throw error;
          this.logger.warn('linking batch failed; linking its notes one by one', { notes: items.length, code: codeOf(error) });
          return await this.linkOneByOne(items, batchContext);
        }
      } catch (error) {
        if (isInternalFault(error)) {
          this.available = false;
          for (const listener of this.fatalListeners) listener(error);
        } else if (!isRetriable(error) && items.length === 1) {
          return [{ kind: 'failed', error: asLinkFailure(error) } satisfies NoteOutcome];
        }
        span.setStatus({ code: SpanStatusCode.ERROR, message: codeOf(error) });
        throw error;
      } finally {
        this.metrics.recordBatch(mentions);
        this.metrics.recordPhase('link', (performance.now() - started) / 1000);
        span.end();
      }
    });
  }

  private async linkWithRetry(notes: NoteInput[]): Promise<LinkedNote[]> {
    const linked = await withRetry(() => this.linker.linkNotes(notes), {
      ...this.retry,
      onRetry: (error, attempt, waitMs) => {
        this.available = false;
        this.metrics.recordRetry('link');
        this.logger.warn('linking failed, retrying', { attempt, waitMs, code: codeOf(error) });
      },
    });
    this.available = true;
    return linked;
  }

  private async linkOneByOne(items: QueuedNote[], batchContext: SpanContext): Promise<NoteOutcome[]> {
    const outcomes: NoteOutcome[] = [];
    for (const item of items) {
      try {
        const [linked] = await this.linkWithRetry([item.note]);
        outcomes.push({ kind: 'linked', linked: linked!, batchContext });
      } catch (error) {
        if (isRetriable(error) || isInternalFault(error)) throw error;
        trace.getActiveSpan()?.addEvent('note failed', { 'cuilink.error.code': codeOf(error) });
        outcomes.push({ kind: 'failed', error: asLinkFailure(error) });
      }
    }
    return outcomes;
  }
}

export function codeOf(error: unknown): string {
  return error instanceof CuilinkError ? error.code : typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : (error as Error)?.name ?? 'ERROR';
}

function asLinkFailure(error: unknown): CuilinkError {
  if (error instanceof CuilinkError) return error;
  return new CuilinkError('LINK_FAILED', `linking failed: ${(error as Error)?.message ?? String(error)}`);
}
