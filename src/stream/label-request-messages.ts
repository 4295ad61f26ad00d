import { CuilinkError } from '../kb/errors.ts';
import type { Logger } from '../telemetry/logger.ts';
import type { StageMetrics } from '../telemetry/stage-metrics.ts';
import type { OutboundRecord as Message, TopicRecords as TopicMessages } from './kafka/client-types.ts';
import type { LabelProposal } from './label-selection/label-proposal.ts';
import type { LabelSelector } from './label-selection/label-selector.ts';
import type { StageCodec } from './stage-codec.ts';
import { recordBytes, type TopicSizeLimits } from './topic-size-limits.ts';

/** A label request ready to produce, and the proposal it answers (dropped with it). */
export interface LabelRequestMessage {
  proposal: LabelProposal;
  topic: string;
  message: Message;
}

/** The proposals as LabelRequest records; one the schema cannot carry is dropped (the selector discards it). */
export async function labelRequestMessages(proposals: LabelProposal[], topicOf: (p: LabelProposal) => string, codec: StageCodec, selector: LabelSelector | undefined, logger: Logger, metrics: StageMetrics, traceHeaders: Record<string, string>): Promise<LabelRequestMessage[]> {
  const out: LabelRequestMessage[] = [];
  for (const proposal of proposals) {
    const topic = topicOf(proposal);
    let encoded;
    try {
      encoded = await codec.encodeLabelRequest(proposal, topic);
    } catch (error) {
      // A request the schema cannot carry must not hold up the notes' output; a retriable
      // failure (registry unreachable) fails the delivery, which puts the proposals back.
      if (!(error instanceof CuilinkError) || error.retriable) throw error;
      selector?.discard([proposal]);
      metrics.recordSideRecordsDropped({ kind: 'label_request', reason: 'not_encodable' });
      logger.warn('label request not encodable; dropped', { noteId: proposal.noteId, mentionId: proposal.mention.mentionId, code: error.code });
      continue;
    }
    out.push({ proposal, topic, message: { key: proposal.noteId, value: encoded.value, headers: { ...encoded.headers, ...traceHeaders } } });
  }
  return out;
}

/**
 * The requests that fit their topic under its limit now (Kafka's default until the broker refuses
 * one, then learned down). One that does not is dropped like one not encodable: nothing in it can
 * be cut (ids, label), and sent it would be refused on every attempt, which stopped the stage on
 * its note. The caller keeps only what this returns, so a request is dropped (and counted) once.
 */
export function fittingLabelRequests(requests: LabelRequestMessage[], sizes: TopicSizeLimits, selector: LabelSelector | undefined, logger: Logger, metrics: StageMetrics): LabelRequestMessage[] {
  return requests.filter(({ proposal, topic, message }) => {
    if (sizes.fits(topic, message)) return true;
    selector?.discard([proposal]);
    metrics.recordSideRecordsDropped({ kind: 'label_request', reason: 'too_large' });
    logger.warn('label request too large for its topic; dropped', { topic, bytes: recordBytes(message), maxBytes: sizes.recordBudget(topic) });
    return false;
  });
}

/** The requests as one batch of messages per topic. */
export function labelRequestsByTopic(requests: readonly LabelRequestMessage[]): TopicMessages[] {
  const byTopic = new Map<string, Message[]>();
  for (const { topic, message } of requests) {
    const messages = byTopic.get(topic);
    if (messages === undefined) byTopic.set(topic, [message]);
    else messages.push(message);
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}
