import type { InputCommit, KafkaConsumerClient, KafkaProducerClient, TopicRecords as TopicMessages } from './kafka/client-types.ts';
import { CuilinkError } from '../kb/errors.ts';
import { withRetry, type RetryOptions } from './retry.ts';
import { isProducerFencedCode } from './kafka/kafka-errors.ts';
import type { StageConfig } from './stage-config.ts';
import { isTooLarge, recordBytes, type TopicSizeLimits } from './topic-size-limits.ts';

/** The offset to commit for one partition (the next record to read), with the group membership it was read under. */
export type PartitionCommit = InputCommit;

/**
 * The broker refused a produce request as too large although it fit the known limit: `bytes`
 * is what the request held. Nothing of the step was committed; the caller lowers the topic's
 * limit, fits the records again and redoes the step.
 */
export class RecordRefusedError extends CuilinkError {
  constructor(
    readonly topic: string,
    readonly bytes: number,
    cause: unknown,
  ) {
    super('RECORD_REFUSED', `${topic} refused ${bytes} bytes as too large`, { cause });
  }
}

/**
 * Writes a partition's outputs and commits its input offset, in that order, as one step:
 * at-least-once sends (idempotent producer, acks=all) and commits once the send is acknowledged;
 * exactly-once sends and commits inside one Kafka transaction. Steps are serialized: one
 * transaction at a time per producer, and per-partition output order is the call order.
 * Messages go out in produce requests cut to the topics' size limits (TopicSizeLimits.chunk).
 * A request the broker refuses as too large may have been written for some partitions and not
 * others, which leaves the idempotent producer's sequence numbers wrong: the producer is
 * replaced (a fresh producer id) before RecordRefusedError is thrown.
 */
export class OutputDelivery {
  private tail: Promise<unknown> = Promise.resolve();
  private producer: KafkaProducerClient | undefined;
  /**
   * Set once this producer was fenced (another instance holds our transactional id) or a
   * transaction could be neither finished nor aborted: every later step fails with it, since a
   * fresh producer would take the id back from the instance that rightly holds it now.
   */
  private broken: CuilinkError | undefined;

  constructor(
    private readonly createProducer: () => KafkaProducerClient,
    private readonly consumer: KafkaConsumerClient,
    private readonly config: Pick<StageConfig, 'delivery'>,
    private readonly sizes: TopicSizeLimits,
    /** How an at-least-once offset commit is retried on its own (without producing the records again). */
    private readonly commitRetry: RetryOptions = { maxAttempts: 5, initialBackoffMs: 100, maxBackoffMs: 2000 },
  ) {}

  async connect(): Promise<void> {
    const producer = this.createProducer();
    try {
      await producer.connect();
    } catch (error) {
      await producer.close().catch(() => {});
      throw error;
    }
    this.producer = producer;
  }

  async disconnect(): Promise<void> {
    // A step in flight (label requests sent on the stage's timer) ends first: closed under it, the
    // producer would leave its transaction open until transactionTimeoutMs.
    await this.tail;
    await this.producer?.close();
  }

  /** Without `commit`: records that answer no input (label requests of a closed window), sent alone (in a transaction of their own). */
  deliver(topicMessages: TopicMessages[], commit?: PartitionCommit): Promise<void> {
    const step = this.tail.then(async () => {
      if (this.broken !== undefined) throw this.broken;
      if (this.producer === undefined) await this.connect();
    }).then(() => (this.config.delivery === 'exactly-once' ? this.transactional(topicMessages, commit) : this.atLeastOnce(topicMessages, commit)));
    this.tail = step.catch(() => {});
    return step;
  }

  /** One TopicMessages per produce request, each within its topic's limit, in order. */
  private requests(topicMessages: TopicMessages[]): TopicMessages[] {
    return topicMessages.flatMap(({ topic, messages }) => this.sizes.chunk(topic, messages).map((chunk) => ({ topic, messages: chunk })));
  }

  private async sendAll(topicMessages: TopicMessages[], send: (request: TopicMessages) => Promise<unknown>): Promise<void> {
    for (const request of this.requests(topicMessages)) {
      try {
        await send(request);
      } catch (error) {
        if (!isTooLarge(error)) throw error;
        throw new RecordRefusedError(request.topic, request.messages.reduce((sum, m) => sum + recordBytes(m), 0), error);
      }
    }
  }

  /**
   * After a refused record the producer's idempotent sequence is out of step with the broker's: it
   * is closed, and the next step connects a fresh one (a reconnect that fails is tried again then,
   * never left behind as a closed producer). In a transaction, only once the transaction is aborted.
   */
  private async retireProducer(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    await producer?.close().catch(() => {});
  }

  private async atLeastOnce(topicMessages: TopicMessages[], commit: PartitionCommit | undefined): Promise<void> {
    try {
      await this.sendAll(topicMessages, (request) => this.producer!.send([request]));
    } catch (error) {
      if (error instanceof RecordRefusedError) await this.retireProducer();
      throw error;
    }
    if (commit === undefined) return;
    // The records are written: a commit that fails is retried alone. Once its retries run out
    // the error is not retriable, so the caller does not produce the records a second time; they
    // are read again after the hand-back (at-least-once).
    try {
      await withRetry(() => this.consumer.commit([commit]), this.commitRetry);
    } catch (error) {
      throw new CuilinkError('COMMIT_FAILED', `${commit.topic}/${commit.partition}: output written but offset ${commit.offset} not committed: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Stops this delivery for good with `error` (see `broken`) and closes the producer. */
  private async breakWith(error: CuilinkError): Promise<CuilinkError> {
    this.broken ??= error;
    const producer = this.producer;
    this.producer = undefined;
    await producer?.close().catch(() => {});
    return this.broken;
  }

  private async transactional(topicMessages: TopicMessages[], commit: PartitionCommit | undefined): Promise<void> {
    const transaction = await this.producer!.transaction();
    let committing = false;
    try {
      await this.sendAll(topicMessages, (request) => transaction.send(request));
      // KIP-447: the commit carries the membership the records were read under; once the group has moved on, the coordinator refuses it and the transaction aborts.
      if (commit) await transaction.commitInput(commit);
      committing = true;
      await transaction.commit();
    } catch (error) {
      if (isProducerFenced(error)) throw await this.breakWith(error as CuilinkError);
      try {
        await transaction.abort();
      } catch (abortError) {
        if (isProducerFenced(abortError)) throw await this.breakWith(abortError as CuilinkError);
        const code = (abortError as { code?: unknown }).code;
        // A transaction left open because the broker was unreachable would block every later one:
        // a fresh producer with the same transactional id has the coordinator abort it. Anything
        // else stuck is not ours to force: the stage stops and its supervisor restarts it.
        if (code !== 'KAFKA_NETWORK' && code !== 'KAFKA_TIMEOUT') {
          throw await this.breakWith(new CuilinkError('TRANSACTION_STUCK', `a transaction could be neither committed nor aborted: ${(abortError as Error).message}`, { cause: abortError }));
        }
        await this.retireProducer();
        // A commit that failed this way may have reached the coordinator and been written (its
        // answer lost): redone here, its records would be committed twice. Handed back instead,
        // the partition is read again from what is committed, whichever way it went.
        if (committing) throw new CuilinkError('TRANSACTION_OUTCOME_UNKNOWN', `the transaction's commit was not answered and it could not be aborted: ${(error as Error).message}`, { cause: error });
        throw error;
      }
      if (error instanceof RecordRefusedError) await this.retireProducer();
      throw error;
    }
  }
}

function isProducerFenced(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && isProducerFencedCode(code);
}
