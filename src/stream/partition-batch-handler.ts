import { setTimeout as sleep } from 'node:timers/promises';
import { ROOT_CONTEXT, SpanStatusCode, trace, type Link, type Tracer } from '@opentelemetry/api';
import type { InboundRecord as KafkaMessage, OutboundRecord as Message, PartitionBatch, TopicRecords as TopicMessages } from './kafka/client-types.ts';
import { injectRecordContext, recordSpanContext, type RecordHeaders } from '../telemetry/kafka-trace-context.ts';
import type { LinkedNote, NoteInput } from '../link/types.ts';
import type { LabelProposal } from './label-selection/label-proposal.ts';
import type { LabelSelector } from './label-selection/label-selector.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { StageMetrics } from '../telemetry/stage-metrics.ts';
import { decodeInputRecord, type RejectedRecord } from './input-record.ts';
import type { MentionBatcher } from './mention-batcher.ts';
import { codeOf, type NoteOutcome, type QueuedNote } from './note-batch-linker.ts';
import { RecordRefusedError, type OutputDelivery } from './output-delivery.ts';
import { withRetry, type RetryOptions } from './retry.ts';
import type { StageCodec } from './stage-codec.ts';
import { mentionsToReview } from './review-selection.ts';
import type { StageConfig } from './stage-config.ts';
import type { StageProgress } from './stage-progress.ts';
import { CANDIDATES_CUT_HEADER, type OutputFitter } from './output-fitter.ts';
import type { TopicSizeLimits } from './topic-size-limits.ts';
import { fittingLabelRequests, labelRequestMessages, labelRequestsByTopic, type LabelRequestMessage } from './label-request-messages.ts';
import { CuilinkError } from '../kb/errors.ts';
import type { DeadLetterBreaker } from './dead-letter-breaker.ts';

type Outcome = NoteOutcome | RejectedRecord;

/** One group's records ready to produce, and what they say for metrics and logs. */
interface BuiltRecords {
  topicMessages: TopicMessages[];
  produced: number;
  deadCodes: string[];
  deadOffsets: string[];
  /** Input offsets whose output or dead letter was cut to fit. */
  cut: string[];
  /** The produced links by the stage that chose them (`via`; NIL ones under `nil`). */
  byStage: Map<string, number>;
  /** Mentions also sent to the review topic. */
  reviewed: number;
  /** Input offsets with a review record the review topic cannot take (left out). */
  unreviewed: string[];
}

interface Entry {
  message: KafkaMessage;
  /** The decoded note (its mention texts are what the label selector counts surfaces by). */
  note?: NoteInput;
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
  progress: StageProgress;
  sizes: TopicSizeLimits;
  fitter: OutputFitter;
  isStopping: () => boolean;
  /** The label selector and where its requests go; absent: no label requests. */
  labels?: LabelRouting;
  /** Stops delivery when too large a share of recent records is dead-lettered; absent: disabled. */
  breaker?: DeadLetterBreaker;
}

export interface LabelRouting {
  selector: LabelSelector;
  learnTopic?: string;
  measureTopic?: string;
}

/**
 * Handles one fetched batch of one partition (eachBatch): decode and validate each record,
 * hand notes to the shared micro-batcher, and as soon as a prefix of the partition's records has
 * an outcome, produce it (linked notes to the output topic keyed by note id, rejects to the
 * dead-letter topic) and commit its offsets — prefix by prefix, so per-partition order holds and
 * no offset is committed before its output is acknowledged. When stopping, it stops taking new
 * records but finishes those already handed to the batcher.
 */
export class PartitionBatchHandler {
  constructor(private readonly deps: PartitionBatchHandlerDeps) {}

  async handle(batch: PartitionBatch): Promise<void> {
    const { batcher, metrics } = this.deps;
    const entries: Entry[] = [];
    // Deliveries run one at a time beside the submission loop, so linking never waits on a produce.
    let delivering: Promise<void> = Promise.resolve();
    let deliveryError: unknown;
    const deliverSettled = () => {
      delivering = delivering
        .then(() => (deliveryError === undefined ? this.flushSettledPrefix(entries, batch) : undefined))
        .catch((error: unknown) => void (deliveryError ??= error));
    };
    const limits = { maxNoteChars: this.deps.config.limits.maxNoteChars, maxMentions: this.deps.config.limits.maxMentionsPerNote, maxMentionChars: this.deps.config.limits.maxMentionChars };
    // A record that cannot be decoded for an internal reason (a registry that stays down) ends the
    // loop, but the batch is handed back only after the records before it are delivered or failed:
    // thrown at once, their deliveries would produce and commit behind the consumer's restart.
    let decodeFault: unknown;
    for (const message of batch.messages) {
      if (batch.isStale() || this.deps.isStopping() || deliveryError !== undefined) break;
      const started = performance.now();
      let decoded: Awaited<ReturnType<typeof decodeInputRecord>>;
      try {
        decoded = await this.retrying(`decode ${batch.topic}/${batch.partition}`, () => decodeInputRecord(this.deps.codec, message, limits));
      } catch (error) {
        decodeFault = error;
        break;
      }
      metrics.recordPhase('decode', (performance.now() - started) / 1000);
      metrics.recordConsumed();
      const entry: Entry = { message };
      entries.push(entry);
      if (decoded.kind === 'rejected') {
        entry.outcome = decoded;
        deliverSettled();
      } else {
        await batcher.whenBelowLimit();
        entry.note = decoded.queued.note;
        entry.pending = this.submitWhenRoom(decoded.queued).then(
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
    if (decodeFault !== undefined) throw decodeFault;
  }

  /** Submits a note; a full batcher queue (BATCHER_FULL, retriable) is waited out, not turned into a handed-back batch. */
  private async submitWhenRoom(queued: QueuedNote): Promise<NoteOutcome> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.deps.batcher.submit(queued);
      } catch (error) {
        if (codeOf(error) !== 'BATCHER_FULL' || this.deps.isStopping()) throw error;
        this.deps.metrics.recordRetry('submit');
        await sleep(Math.min(1000, 10 * 2 ** Math.min(attempt, 7)));
        await this.deps.batcher.whenBelowLimit();
      }
    }
  }

  private async flushSettledPrefix(entries: Entry[], batch: PartitionBatch): Promise<void> {
    let settled = 0;
    while (settled < entries.length && entries[settled]!.outcome !== undefined) settled++;
    if (settled === 0) return;
    const group = entries.slice(0, settled);
    await this.deliver(group, batch);
    entries.splice(0, settled);
  }

  private async deliver(group: Entry[], batch: PartitionBatch): Promise<void> {
    const { tracer, metrics } = this.deps;
    const linked = group.filter((e) => e.outcome!.kind === 'linked');
    const batchContexts = linked.map((e) => (e.outcome as Extract<Outcome, { kind: 'linked' }>).batchContext);
    const parent = batchContexts[0] ? trace.setSpanContext(ROOT_CONTEXT, batchContexts[0]) : ROOT_CONTEXT;
    // A record dead-lettered before or while linking reaches the output only here: linked to its own trace.
    const deadContexts = group.flatMap((e) => {
      const context = e.outcome!.kind === 'linked' ? undefined : recordSpanContext(e.message.headers);
      return context ? [context] : [];
    });
    const links: Link[] = [...batchContexts.slice(1), ...deadContexts].map((context) => ({ context }));
    const started = performance.now();
    let proposals: LabelProposal[] = [];
    await tracer.startActiveSpan('cuilink.stream.produce', { links, attributes: { 'messaging.destination.partition.id': String(batch.partition), 'cuilink.records': group.length } }, parent, async (span) => {
      try {
        const traceHeaders = injectRecordContext(trace.setSpan(parent, span));
        const last = group[group.length - 1]!.message.offset;
        // KIP-447: the commit carries the membership the records were read under.
        const commit = { topic: batch.topic, partition: batch.partition, offset: (BigInt(last) + 1n).toString(), membership: batch.membership };
        proposals = this.proposeLabels(group);
        let labelMessages = await this.labelMessages(proposals, traceHeaders);
        let built: BuiltRecords;
        // A request the broker refuses although it fit the known limit (a broker-wide limit below
        // the topic's, a config changed since start, a wrong override): nothing was committed; the
        // topic's limit is lowered below what was refused and the group fitted and delivered again,
        // so that only the records above the learned limit are cut or dead-lettered.
        for (let attempt = 1; ; attempt++) {
          built = await this.build(group, batch, traceHeaders);
          if (attempt === 1) this.guardDeadLetterRate(group, batch, built.deadOffsets);
          labelMessages = fittingLabelRequests(labelMessages, this.deps.sizes, this.deps.labels?.selector, this.deps.logger, this.deps.metrics);
          built.topicMessages.push(...labelRequestsByTopic(labelMessages));
          try {
            await this.retrying(`deliver ${batch.topic}/${batch.partition}`, () => this.deps.delivery.deliver(built.topicMessages, commit));
            break;
          } catch (error) {
            if (!(error instanceof RecordRefusedError) || attempt >= 16) throw error;
            const lowered = this.deps.sizes.lower(error.topic, error.bytes);
            this.deps.logger.warn('the broker refused records as too large; fitting them again under a lower limit', { topic: error.topic, refusedBytes: error.bytes, maxMessageBytes: lowered });
          }
        }
        for (const p of this.deps.labels?.selector.confirm(proposals) ?? []) metrics.recordLabelRequested(p.stream);
        proposals = [];
        if (batch.highWatermark !== undefined) metrics.recordLag(batch.topic, batch.partition, batch.highWatermark, commit.offset);
        const ackedAt = Date.now();
        metrics.recordProduced(built.produced);
        for (const [stage, n] of built.byStage) metrics.recordLinks(stage, n);
        if (built.reviewed > 0) metrics.recordReviewed(built.reviewed);
        for (const code of built.deadCodes) metrics.recordDeadLettered(code);
        for (const entry of group) {
          const createdAt = Number(entry.message.timestamp);
          if (Number.isFinite(createdAt) && createdAt > 0) metrics.recordEndToEnd(Math.max(0, ackedAt - createdAt) / 1000);
        }
        span.setAttribute('cuilink.produced', built.produced);
        span.setAttribute('cuilink.dead_lettered', built.deadCodes.length);
        if (built.deadCodes.length > 0) this.deps.logger.warn('records dead-lettered', { topic: batch.topic, partition: batch.partition, codes: built.deadCodes, offsets: built.deadOffsets });
        if (built.cut.length > 0) this.deps.logger.warn('records cut to fit their topic', { topic: batch.topic, partition: batch.partition, offsets: [...new Set(built.cut)] });
        if (built.unreviewed.length > 0) {
          metrics.recordSideRecordsDropped({ kind: 'review', reason: 'too_large' }, built.unreviewed.length);
          this.deps.logger.warn('review records too large for the review topic; not sent', { topic: batch.topic, partition: batch.partition, offsets: [...new Set(built.unreviewed)] });
        }
      } catch (error) {
        // Not produced: the proposals wait for the next delivery (none lost, none asked twice).
        this.deps.labels?.selector.putBack(proposals);
        span.setStatus({ code: SpanStatusCode.ERROR, message: codeOf(error) });
        throw error;
      } finally {
        metrics.recordPhase('produce', (performance.now() - started) / 1000);
        span.end();
      }
    });
  }

  /**
   * Counts the group's outcomes in the dead-letter-rate breaker; once it is open nothing more is
   * produced or committed (the group is handed back and read again when the breaker closes or
   * the stage restarts):
   * a systemic fault (an upstream schema change, a broken codec) must not drain the stream.
   * Each input offset counts once, however often its group is handed back and read again.
   */
  private guardDeadLetterRate(group: Entry[], batch: PartitionBatch, deadOffsets: string[]): void {
    const breaker = this.deps.breaker;
    if (breaker === undefined) return;
    const dead = new Set(deadOffsets);
    for (const { message } of group) breaker.recordOnce({ topic: batch.topic, partition: batch.partition, offset: message.offset }, dead.has(message.offset) ? 'dead' : 'ok');
    if (breaker.open) {
      const { share, records: window } = breaker.state;
      throw new CuilinkError('DEAD_LETTER_BREAKER_OPEN', `${Math.round(share * 100)}% of the last ${window} records would be dead-lettered: delivery stopped`);
    }
  }

  /** Shows the selector the group's linked notes and takes the label requests now due (those without a topic are dropped). */
  private proposeLabels(group: Entry[]): LabelProposal[] {
    const labels = this.deps.labels;
    if (labels === undefined) return [];
    const now = Date.now();
    for (const entry of group) if (entry.outcome?.kind === 'linked' && entry.note) labels.selector.observe(entry.note, entry.outcome.linked, now);
    return this.routed(labels.selector.take(now));
  }

  /** A measure request with no measure topic is not asked; its note stays out of learning all the same. */
  private routed(taken: LabelProposal[]): LabelProposal[] {
    this.deps.labels?.selector.dropUnsent(taken.filter((p) => this.labelTopic(p) === undefined));
    return taken.filter((p) => this.labelTopic(p) !== undefined);
  }

  /**
   * Sends the label requests of a window that closed while no batch came (an idle stream), alone:
   * they answer no input, so no offset goes with them. Called on a timer; a failure puts them
   * back for the next batch or tick (a broker outage is the consumer's to report).
   */
  async flushDueLabels(): Promise<void> {
    const labels = this.deps.labels;
    if (labels === undefined || this.deps.isStopping()) return;
    const proposals = this.routed(labels.selector.take(Date.now()));
    if (proposals.length === 0) return;
    try {
      await this.deps.delivery.deliver(labelRequestsByTopic(fittingLabelRequests(await this.labelMessages(proposals, {}), this.deps.sizes, labels.selector, this.deps.logger, this.deps.metrics)));
    } catch (error) {
      labels.selector.putBack(proposals);
      this.deps.logger.warn('label requests not delivered; kept for the next delivery', { requests: proposals.length, code: codeOf(error) });
      return;
    }
    for (const p of labels.selector.confirm(proposals)) this.deps.metrics.recordLabelRequested(p.stream);
  }

  private labelTopic(p: LabelProposal): string | undefined {
    return p.stream === 'learn' ? this.deps.labels?.learnTopic : this.deps.labels?.measureTopic;
  }

  private labelMessages(proposals: LabelProposal[], traceHeaders: Record<string, string>): Promise<LabelRequestMessage[]> {
    return labelRequestMessages(proposals, (p) => this.labelTopic(p)!, this.deps.codec, this.deps.labels?.selector, this.deps.logger, this.deps.metrics, traceHeaders);
  }

  /** The group's output and dead-letter records, each fitted to its topic's size limit. */
  private async build(group: Entry[], batch: PartitionBatch, traceHeaders: Record<string, string>): Promise<BuiltRecords> {
    const { output: outputTopic, deadLetter: deadTopic } = this.deps.config.topics;
    const output: Message[] = [];
    const deadLetters: Message[] = [];
    const built: BuiltRecords = { topicMessages: [], produced: 0, deadCodes: [], deadOffsets: [], cut: [], byStage: new Map(), reviewed: 0, unreviewed: [] };
    const reviewTopic = this.deps.config.topics.review;
    const review: Message[] = [];
    for (const entry of group) {
      const { message, dead, cut } = await this.make(entry, batch, traceHeaders);
      if (cut) built.cut.push(entry.message.offset);
      if (dead !== undefined) {
        deadLetters.push(message);
        built.deadCodes.push(dead);
        built.deadOffsets.push(entry.message.offset);
        continue;
      }
      output.push(message);
      if (entry.outcome?.kind === 'linked') await this.countAndReview(entry.outcome.linked, built, review, traceHeaders, entry.message.offset);
    }
    if (output.length > 0) built.topicMessages.push({ topic: outputTopic, messages: output });
    if (deadLetters.length > 0) built.topicMessages.push({ topic: deadTopic, messages: deadLetters });
    if (review.length > 0) built.topicMessages.push({ topic: reviewTopic!, messages: review });
    built.reviewed = review.length;
    built.produced = output.length;
    return built;
  }

  /** Counts a produced note's links by stage and adds the review records of its unsure mentions. */
  private async countAndReview(linked: LinkedNote, built: BuiltRecords, review: Message[], traceHeaders: Record<string, string>, offset: string): Promise<void> {
    for (const m of linked.mentions) {
      const stage = m.nil ? 'nil' : (m.via ?? 'unknown');
      built.byStage.set(stage, (built.byStage.get(stage) ?? 0) + 1);
    }
    const reviewTopic = this.deps.config.topics.review;
    if (reviewTopic === undefined) return;
    for (const m of mentionsToReview(linked, this.deps.config.review.belowConfidence)) {
      const encoded = await this.deps.codec.encodeReviewMention(linked, m, reviewTopic);
      const message = { key: linked.noteId, value: encoded.value, headers: { ...encoded.headers, ...traceHeaders } };
      // Nothing in it can be cut (ids and label): one the topic cannot take is left out, or the
      // broker refused it on every attempt and the stage stopped on this note.
      if (this.deps.sizes.fits(reviewTopic, message)) review.push(message);
      else built.unreviewed.push(offset);
    }
  }

  /** One entry's record under the current limits: its LinkedNote, or its dead letter (`dead`: the code). */
  private async make(entry: Entry, batch: PartitionBatch, traceHeaders: Record<string, string>): Promise<{ message: Message; dead?: string; cut: boolean }> {
    const { config, fitter, sizes } = this.deps;
    const { output: outputTopic, deadLetter: deadTopic } = config.topics;
    const outcome = entry.outcome!;
    const source = `${batch.topic}/${batch.partition}/${entry.message.offset}`;
    let error: CuilinkError;
    let stage: string;
    if (outcome.kind === 'linked') {
      const message = await fitter.linked(outputTopic, outcome.linked, (encoded) => ({ key: outcome.linked.noteId, value: encoded.value, headers: { ...encoded.headers, ...traceHeaders, 'cuilink-source': source } }));
      if (message !== undefined) return { message, cut: message.headers?.[CANDIDATES_CUT_HEADER] !== undefined };
      error = new CuilinkError('OUTPUT_TOO_LARGE', `the LinkedNote of note ${outcome.linked.noteId} (${outcome.linked.mentions.length} mentions) does not fit ${outputTopic} (max.message.bytes ${sizes.maxMessageBytes(outputTopic)}) even without candidates`);
      stage = 'produce';
    } else {
      error = outcome.error;
      stage = outcome.kind === 'failed' ? 'link' : outcome.step;
    }
    const info = { errorCode: error.code, reason: error.message, sourceTopic: batch.topic, sourcePartition: batch.partition, sourceOffset: entry.message.offset, stage, failedAt: Date.now(), key: entry.message.key, value: entry.message.value, headers: (entry.message.headers ?? {}) as RecordHeaders };
    const letter = await fitter.deadLetter(deadTopic, info, (encoded, key) => ({ key, value: encoded.value, headers: { ...encoded.headers, ...traceHeaders, 'cuilink-source': source, 'cuilink-error-code': error.code } }));
    return { message: letter.message, dead: error.code, cut: letter.cut };
  }

  /** `operation` with retries; while its attempts fail, `key` is listed as stalled (/readyz 503). */
  private async retrying<T>(key: string, operation: () => Promise<T>): Promise<T> {
    const name = key.split(' ')[0]!;
    let result: T;
    try {
      result = await withRetry(operation, {
        ...this.deps.retry,
        shouldStop: () => false,
        onRetry: (error, attempt, waitMs) => {
          this.deps.progress.failed(key);
          this.deps.metrics.recordRetry(name);
          this.deps.logger.warn(`${name} failed, retrying`, { attempt, waitMs, code: codeOf(error), on: key.slice(name.length + 1) });
        },
      });
    } catch (error) {
      // Handed back to Kafka: the partition may be another instance's next, so it must not keep /readyz at 503 here.
      this.deps.progress.abandoned(key);
      throw error;
    }
    this.deps.progress.succeeded(key);
    return result;
  }
}
