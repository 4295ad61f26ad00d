import type { KafkaClient, OutboundRecord as Message } from './kafka/client-types.ts';
import { isTooLargeCode } from './kafka/kafka-errors.ts';
import type { Logger } from '../telemetry/logger.ts';

/** Kafka's default `max.message.bytes` (1 MiB + 12), used when a topic's own cannot be read. */
export const KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;
/** A record batch's header (61 bytes in format v2), rounded up with room for the varints that grow. */
const BATCH_OVERHEAD = 128;
/** Per record beyond key, value and headers: length, attributes, timestamp and offset deltas, counts (varints, generous). */
const RECORD_OVERHEAD = 40;
const HEADER_OVERHEAD = 10;

/** Bytes `message` takes in a record batch (uncompressed: the stage does not compress), an upper bound. */
export function recordBytes(message: Message): number {
  let bytes = RECORD_OVERHEAD + byteLength(message.key) + byteLength(message.value);
  for (const [key, value] of Object.entries(message.headers ?? {})) {
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) bytes += HEADER_OVERHEAD + Buffer.byteLength(key) + byteLength(v);
  }
  return bytes;
}

function byteLength(value: Buffer | string | null | undefined): number {
  if (value === null || value === undefined) return 0;
  return typeof value === 'string' ? Buffer.byteLength(value) : value.length;
}

/**
 * The largest record batch each output topic accepts (`max.message.bytes`), so that the stage
 * never produces a record or a batch the broker is known to refuse: records are fitted to
 * `recordBudget` before they are produced and batches are cut by `chunk`. Read once at start;
 * lowered when the broker refuses a record anyway (MESSAGE_TOO_LARGE: a broker-wide
 * `message.max.bytes` below the topic's, a config changed since start, a wrong override).
 */
export class TopicSizeLimits {
  private readonly maxBytes = new Map<string, number>();

  /**
   * Reads the topics' `max.message.bytes`; `override` (config) wins for `topics` (output, dead
   * letters), Kafka's default when neither is known. `sideTopics` (review, label requests) are
   * always described: the override is sized for the output topic, which `cuilink topics create`
   * plans larger than them, so applying it there would promise records their topics refuse.
   */
  async load(kafka: KafkaClient, topics: string[], override: number | undefined, logger: Logger, sideTopics: string[] = []): Promise<void> {
    if (override !== undefined) for (const topic of topics) this.maxBytes.set(topic, override);
    const described = override === undefined ? [...topics, ...sideTopics] : sideTopics;
    if (described.length > 0) await this.describe(kafka, described, logger);
    const all = [...topics, ...sideTopics];
    logger.info(override === undefined ? 'record size limits' : 'record size limits (configured for the output and dead-letter topics)', { maxMessageBytes: Object.fromEntries(all.map((t) => [t, this.maxMessageBytes(t)])) });
  }

  private async describe(kafka: KafkaClient, topics: string[], logger: Logger): Promise<void> {
    const admin = kafka.admin();
    try {
      const described = await admin.describeTopicConfigs(topics, ['max.message.bytes']);
      for (const [topic, configs] of described) {
        const value = Number(configs.get('max.message.bytes'));
        if (Number.isFinite(value) && value > 0) this.maxBytes.set(topic, value);
      }
    } catch (error) {
      logger.warn('cannot describe the topics’ configs; assuming Kafka’s default max.message.bytes (set topics.maxMessageBytes for the output and dead-letter topics)', { error, topics, assumed: KAFKA_DEFAULT_MAX_MESSAGE_BYTES });
    } finally {
      await admin.close();
    }
  }

  maxMessageBytes(topic: string): number {
    return this.maxBytes.get(topic) ?? KAFKA_DEFAULT_MAX_MESSAGE_BYTES;
  }

  /** The most bytes (recordBytes) one record for `topic` may take. */
  recordBudget(topic: string): number {
    return this.maxMessageBytes(topic) - BATCH_OVERHEAD;
  }

  fits(topic: string, message: Message): boolean {
    return recordBytes(message) <= this.recordBudget(topic);
  }

  /**
   * The broker refused a record of `bytes` for `topic`: from now on records must be smaller. The
   * real limit is unknown (only that it is below `bytes`), so the budget drops to 3/4 of the
   * refused size: a few refusals reach any limit, at the cost of cutting some records that would
   * have fit (they are only those above the learned limit).
   */
  lower(topic: string, bytes: number): number {
    const lowered = Math.max(1024 + BATCH_OVERHEAD, Math.min(this.maxMessageBytes(topic) - 1, Math.floor((bytes * 3) / 4) + BATCH_OVERHEAD));
    this.maxBytes.set(topic, lowered);
    return lowered;
  }

  /**
   * Consecutive runs of `messages` whose bytes together fit one record batch: one produce
   * request per run, so no partition's batch can exceed the limit whatever the partitioner does.
   */
  chunk(topic: string, messages: Message[]): Message[][] {
    const budget = this.recordBudget(topic);
    const chunks: Message[][] = [];
    let current: Message[] = [];
    let bytes = 0;
    for (const message of messages) {
      const size = recordBytes(message);
      if (current.length > 0 && bytes + size > budget) {
        chunks.push(current);
        current = [];
        bytes = 0;
      }
      current.push(message);
      bytes += size;
    }
    if (current.length > 0) chunks.push(current);
    return chunks;
  }
}

/** Whether a produce failed because the broker found a record or batch too large. */
export function isTooLarge(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && isTooLargeCode(code);
}
