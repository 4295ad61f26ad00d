import { ROOT_CONTEXT, SpanStatusCode, trace, type Link, type Tracer } from '@opentelemetry/api';
import type { EachBatchPayload, KafkaMessage, Message, TopicMessages } from 'kafkajs';
import { injectRecordContext, type RecordHeaders } from '../telemetry/kafka-trace-context.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { StageMetrics } from '../telemetry/stage-metrics.ts';
import { decodeInputRecord, type RejectedRecord } from './input-record.ts';
import type { MentionBatcher } from './mention-batcher.ts';
import { codeOf, type NoteOutcome, type QueuedNote } from './note-batch-linker.ts';
import type { OutputDelivery } from './output-delivery.ts';
import { withRetry, type RetryOptions } from './retry.ts';
import type { StageCodec } from './stage-codec.ts';
import type { StageConfig } from './stage-config.ts';

type Outcome = NoteOutcome | RejectedRecord;

interface Entry {
  message: KafkaMessage;
  outcome?: Outcome;
  pending?: Promise<void>;
  /** A retriable failure that outlived its retries: the partition is handed back to Kafka. */
  failure?: unknown;
}

export interface PartitionBatchHandlerDeps {
  config: StageConfig;
  codec: StageCodec;
  batcher: MentionBatcher<QueuedNote, NoteOutcome>;
  delivery: OutputDelivery;
  metrics: StageMetrics;
  tracer: Tracer;
  logger: Logger;
  retry: RetryOptions;
  isStopping: () => boolean;
}

/**
 * Handles one kafkajs fetch batch of one partition (eachBatch): decode and validate each record,
 * hand notes to the shared micro-batcher, and as soon as a prefix of the partition's records has
 * an outcome, produce it (linked notes to the output topic keyed by note id, rejects to the
 * dead-letter topic) and commit its offsets — prefix by prefix, so per-partition order holds and
 * no offset is committed before its output is acknowledged. When stopping, it stops taking new
 * records but finishes those already handed to the batcher.
 */
export class PartitionBatchHandler {
  constructor(private readonly deps: PartitionBatchHandlerDeps) {}

  async handle(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const { batcher, metrics } = this.deps;
    const entries: Entry[] = [];
    // Deliveries run one at a time beside the submission loop, so linking never waits on a produce.
    let delivering: Promise<void> = Promise.resolve();
    let deliveryError: unknown;
    const deliverSettled = () => {
      delivering = delivering
        .then(() => (deliveryError === undefined ? this.flushSettledPrefix(entries, payload) : undefined))
        .catch((error: unknown) => void (deliveryError ??= error));
    };
    const limits = { maxNoteChars: this.deps.config.limits.maxNoteChars, maxMentions: this.deps.config.limits.maxMentionsPerNote, maxMentionChars: this.deps.config.limits.maxMentionChars };
    for (const message of batch.messages) {
      if (!payload.isRunning() || payload.isStale() || this.deps.isStopping() || deliveryError !== undefined) break;
      const started = performance.now();
      const decoded = await withRetry(() => decodeInputRecord(this.deps.codec, message, limits), this.retryFor('decode'));
      metrics.recordPhase('decode', (performance.now() - started) / 1000);
      metrics.recordConsumed();
      const entry: Entry = { message };
      entries.push(entry);
      if (decoded.kind === 'rejected') {
        entry.outcome = decoded;
        deliverSettled();
      } else {
        await batcher.whenBelowLimit();
        entry.pending = batcher.submit(decoded.queued).then(
          (outcome) => {
            entry.outcome = outcome;
            deliverSettled();
          },
          (error) => void (entry.failure = error),
        );
      }
    }
    while (entries.length > 0 && deliveryError === undefined) {
      const head = entries[0]!;
      await head.pending;
      if (head.failure !== undefined) throw head.failure;
      deliverSettled();
      await delivering;
    }
    await delivering;
    if (deliveryError !== undefined) throw deliveryError;
  }

  private async flushSettledPrefix(entries: Entry[], payload: EachBatchPayload): Promise<void> {
    let settled = 0;
    while (settled < entries.length && entries[settled]!.outcome !== undefined) settled++;
    if (settled === 0) return;
    const group = entries.slice(0, settled);
    await this.deliver(group, payload);
    entries.splice(0, settled);
    await payload.heartbeat();
  }

  private async deliver(group: Entry[], payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const { config, codec, tracer, metrics } = this.deps;
    const linked = group.filter((e) => e.outcome!.kind === 'linked');
    const batchContexts = linked.map((e) => (e.outcome as Extract<Outcome, { kind: 'linked' }>).batchContext);
    const parent = batchContexts[0] ? trace.setSpanContext(ROOT_CONTEXT, batchContexts[0]) : ROOT_CONTEXT;
    const links: Link[] = batchContexts.slice(1).map((context) => ({ context }));
    const started = performance.now();
    await tracer.startActiveSpan('cuilink.stream.produce', { links, attributes: { 'messaging.destination.partition.id': String(batch.partition), 'cuilink.records': group.length } }, parent, async (span) => {
      try {
        const traceHeaders = injectRecordContext(trace.setSpan(parent, span));
        const output: Message[] = [];
        const deadLetters: Message[] = [];
        const deadCodes: string[] = [];
        for (const entry of group) {
          const outcome = entry.outcome!;
          const source = `${batch.topic}/${batch.partition}/${entry.message.offset}`;
          if (outcome.kind === 'linked') {
            const encoded = await codec.encodeLinkedNote(outcome.linked);
            output.push({ key: outcome.linked.noteId, value: encoded.value, headers: { ...encoded.headers, ...traceHeaders, 'cuilink-source': source } });
          } else {
            const encoded = await codec.encodeDeadLetter({
              errorCode: outcome.error.code,
              reason: outcome.error.message,
              sourceTopic: batch.topic,
              sourcePartition: batch.partition,
              sourceOffset: entry.message.offset,
              stage: outcome.kind === 'failed' ? 'link' : outcome.step,
              failedAt: Date.now(),
              key: entry.message.key,
              value: entry.message.value,
              headers: (entry.message.headers ?? {}) as RecordHeaders,
            });
            deadLetters.push({ key: entry.message.key, value: encoded.value, headers: { ...encoded.headers, ...traceHeaders, 'cuilink-source': source, 'cuilink-error-code': outcome.error.code } });
            deadCodes.push(outcome.error.code);
          }
        }
        const topicMessages: TopicMessages[] = [];
        if (output.length > 0) topicMessages.push({ topic: config.topics.output, messages: output });
        if (deadLetters.length > 0) topicMessages.push({ topic: config.topics.deadLetter, messages: deadLetters });
        const last = group[group.length - 1]!.message.offset;
        const commit = { topic: batch.topic, partition: batch.partition, offset: nextOffset(last, batch) };
        await withRetry(() => this.deps.delivery.deliver(topicMessages, commit), this.retryFor('deliver'));
        payload.resolveOffset(last);
        const ackedAt = Date.now();
        metrics.recordProduced(output.length);
        for (const code of deadCodes) metrics.recordDeadLettered(code);
        for (const entry of group) {
          const createdAt = Number(entry.message.timestamp);
          if (Number.isFinite(createdAt) && createdAt > 0) metrics.recordEndToEnd(Math.max(0, ackedAt - createdAt) / 1000);
        }
        span.setAttribute('cuilink.produced', output.length);
        span.setAttribute('cuilink.dead_lettered', deadLetters.length);
        if (deadLetters.length > 0) this.deps.logger.warn('records dead-lettered', { topic: batch.topic, partition: batch.partition, codes: deadCodes, offsets: group.filter((e) => e.outcome!.kind !== 'linked').map((e) => e.message.offset) });
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: codeOf(error) });
        throw error;
      } finally {
        metrics.recordPhase('produce', (performance.now() - started) / 1000);
        span.end();
      }
    });
  }

  private retryFor(operation: string): RetryOptions {
    return {
      ...this.deps.retry,
      shouldStop: () => false,
      onRetry: (error, attempt, waitMs) => {
        this.deps.metrics.recordRetry(operation);
        this.deps.logger.warn(`${operation} failed, retrying`, { attempt, waitMs, code: codeOf(error) });
      },
    };
  }
}

/**
 * The offset to commit after `offset`: the next one, or past the batch's end when `offset` is its
 * last data record, so that trailing transaction control records are not read again.
 */
function nextOffset(offset: string, batch: EachBatchPayload['batch']): string {
  const lastData = batch.messages[batch.messages.length - 1]?.offset;
  const base = lastData === offset ? batch.lastOffset() : offset;
  return (BigInt(base) + 1n).toString();
}
