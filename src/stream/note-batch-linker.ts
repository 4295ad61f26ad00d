import { SpanStatusCode, trace, type Link, type SpanContext, type Tracer } from '@opentelemetry/api';
import { CuilinkError } from '../kb/errors.ts';
import type { LinkedNote, LinkingCore, NoteInput } from '../link/types.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { StageMetrics } from '../telemetry/stage-metrics.ts';
import { isRecordFault } from './dead-letter-policy.ts';
import { isRetriable, withRetry, type RetryOptions } from './retry.ts';

/** A validated note waiting for a linking batch, with the trace context its record carried. */
export interface QueuedNote {
  note: NoteInput;
  mentionCount: number;
  recordContext?: SpanContext;
}

/**
 * A note's fate: linked (with the batch span that linked it), or a record fault (`isRecordFault`:
 * a non-retriable CuilinkError whose code is in RECORD_FAULT_CODES), the only failure that may be
 * dead-lettered.
 */
export type NoteOutcome = { kind: 'linked'; linked: LinkedNote; batchContext: SpanContext } | { kind: 'failed'; error: CuilinkError };

/**
 * Codes of internal faults known to concern the whole linker (its encoder could not be kept
 * running, or it was closed): reported as fatal at once, without narrowing the batch down.
 */
export const INTERNAL_FAULT_CODES: ReadonlySet<string> = new Set(['ENCODER_FAILED', 'ENCODER_CLOSED']);

/**
 * Whether a linking failure is an internal fault: anything neither retriable nor proven to be the
 * record's fault (src/stream/dead-letter-policy.ts) — INTERNAL_FAULT_CODES, `INFERENCE_FAILED`, a
 * plain Error, a TypeError from a bug. Never dead-lettered: the stage stops without committing.
 */
export function isInternalFault(error: unknown): boolean {
  return !isRetriable(error) && !isRecordFault(error);
}

/**
 * The stage's batch processor: one LinkingCore call per micro-batch under a `cuilink.stream.batch`
 * span linked to each record's incoming trace context; the linker's encode / retrieve / rerank
 * spans become its children. Retriable failures are retried with backoff and then rethrown (the
 * records stay uncommitted). Any other failure of a batch of several notes is narrowed down note
 * by note, so that the rest of the batch goes through; a note's own failure is dead-lettered only
 * when it is a record fault (`isRecordFault`). Every other failure is an internal fault: it is
 * reported to `onFatal` and rethrown, so no offset is committed and the process exits non-zero
 * (a model that throws on every call, a bug, an encoder that gave up). INTERNAL_FAULT_CODES are
 * not narrowed down at all.
 */
export class NoteBatchLinker {
  /** False from a failed linking attempt (retriable) until the next success, and for good after an internal fault: /readyz. */
  available = true;
  /** The first internal fault reported to `onFatal`; undefined while there was none. */
  fatalError: unknown;
  private readonly fatalListeners: ((error: unknown) => void)[] = [];
  /** The note whose lone linking raised an error (for the log line of an internal fault). */
  private readonly faultNotes = new WeakMap<object, string>();

  constructor(
    private readonly linker: LinkingCore,
    private readonly tracer: Tracer,
    private readonly metrics: StageMetrics,
    private readonly retry: RetryOptions,
    private readonly logger: Logger,
  ) {}

  /** Called on each internal fault (see the class comment): the stage must stop without committing. */
  onFatal(listener: (error: unknown) => void): void {
    this.fatalListeners.push(listener);
  }

  private fatal(error: unknown, noteId: string | undefined): void {
    this.available = false;
    if (this.fatalError === undefined) {
      this.fatalError = error;
      // The note id names the note that triggered it (no text: PHI); the record stays uncommitted.
      this.logger.error('internal fault while linking: not dead-lettered, nothing committed', { code: codeOf(error), error, ...(noteId === undefined ? {} : { noteId }) });
    }
    for (const listener of this.fatalListeners) listener(error);
  }

  link(items: QueuedNote[]): Promise<NoteOutcome[]> {
    const mentions = items.reduce((sum, i) => sum + i.mentionCount, 0);
    const links: Link[] = items.flatMap((i) => (i.recordContext ? [{ context: i.recordContext }] : []));
    const attributes = { 'cuilink.notes': items.length, 'cuilink.mentions': mentions };
    return this.tracer.startActiveSpan('cuilink.stream.batch', { root: true, links, attributes }, async (span): Promise<NoteOutcome[]> => {
      const started = performance.now();
      try {
        const outcomes = await this.outcomesOf(items, span.spanContext());
        // Counted once it has outcomes: a batch that failed is handed back and counted when read again and linked.
        this.metrics.recordBatch(items.reduce((sum, item, i) => sum + (outcomes[i]!.kind === 'linked' ? item.mentionCount : 0), 0));
        return outcomes;
      } catch (error) {
        if (isInternalFault(error)) this.fatal(error, items.length === 1 ? items[0]!.note.noteId : typeof error === 'object' && error !== null ? this.faultNotes.get(error) : undefined);
        span.setStatus({ code: SpanStatusCode.ERROR, message: codeOf(error) });
        throw error;
      } finally {
        this.metrics.recordPhase('link', (performance.now() - started) / 1000);
        span.end();
      }
    });
  }

  /** One outcome per item, in order; rejects with a retriable failure or an internal fault. */
  private async outcomesOf(items: QueuedNote[], batchContext: SpanContext): Promise<NoteOutcome[]> {
    try {
      const linked = await this.linkWithRetry(items.map((i) => i.note));
      return linked.map((note): NoteOutcome => ({ kind: 'linked', linked: note, batchContext }));
    } catch (error) {
      if (isRecordFault(error) && items.length === 1) {
        trace.getActiveSpan()?.addEvent('note failed', { 'cuilink.error.code': error.code });
        return [{ kind: 'failed', error }];
      }
      if (isRetriable(error) || INTERNAL_FAULT_CODES.has(codeOf(error)) || items.length === 1) throw error;
      this.logger.warn('linking batch failed; linking its notes one by one', { notes: items.length, code: codeOf(error) });
      return await this.linkOneByOne(items, batchContext);
    }
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
    // An internal fault keeps the linker unavailable for good: the stage is stopping on it.
    this.available = this.fatalError === undefined;
    return linked;
  }

  private async linkOneByOne(items: QueuedNote[], batchContext: SpanContext): Promise<NoteOutcome[]> {
    const outcomes: NoteOutcome[] = [];
    for (const item of items) {
      try {
        const [linked] = await this.linkWithRetry([item.note]);
        outcomes.push({ kind: 'linked', linked: linked!, batchContext });
      } catch (error) {
        if (!isRecordFault(error)) {
          if (typeof error === 'object' && error !== null) this.faultNotes.set(error, item.note.noteId);
          throw error;
        }
        trace.getActiveSpan()?.addEvent('note failed', { 'cuilink.error.code': error.code });
        outcomes.push({ kind: 'failed', error });
      }
    }
    return outcomes;
  }
}

export function codeOf(error: unknown): string {
  return error instanceof CuilinkError ? error.code : typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : (error as Error)?.name ?? 'ERROR';
}
