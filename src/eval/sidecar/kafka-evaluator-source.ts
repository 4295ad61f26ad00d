import type { GroupMembership, InboundRecord, KafkaClient, KafkaConsumerClient } from '../../stream/kafka/client-types.ts';
import { CuilinkError } from '../../kb/errors.ts';
import { avroToLinkedNote } from '../../stream/avro/avro-conversions.ts';
import { headerString, type RecordCodec } from '../../stream/avro/record-codec.ts';
import { CANDIDATES_CUT_HEADER } from '../../stream/output-fitter.ts';
import { avroToGoldMention } from '../gold-avro.ts';
import type { EvaluatorSource } from './evaluator-service.ts';
import type { SourceOffset } from './sidecar-evaluator.ts';

export interface KafkaEvaluatorSourceOptions {
  kafka: KafkaClient;
  codec: RecordCodec;
  linkedTopic: string;
  goldTopic: string;
  /** The evaluator's own consumer group (never the stage's or a cohort job's). */
  groupId: string;
  /** Where a group without committed offsets starts; default the beginning (every gold label counts). */
  fromBeginning?: boolean;
  log: (line: string) => void;
}

/** Records skipped because they could not be decoded, by error code (the evaluator does not dead-letter). */
export type SkippedCounts = Record<string, number>;

/**
 * Feeds the sidecar evaluator from the LinkedNote and GoldMention topics. Offsets are committed
 * only by commit(), which commits exactly what had been delivered when it was called: the
 * service calls it right after writing a snapshot, so committed offsets never run ahead of the
 * state a restart restores. The commit can still fail or never happen (a crash right after the
 * snapshot), so start() also takes the snapshot's own offsets and skips the records below them:
 * they are in the restored state already. stop() stops delivering but stays in the group so the
 * final commit can follow; close() leaves.
 */
export class KafkaEvaluatorSource implements EvaluatorSource {
  private readonly consumer: KafkaConsumerClient;
  /** Next offset to consume per "topic\0partition", for everything handed to the evaluator (restored state included). */
  private readonly delivered = new Map<string, string>();
  private redeliveredCount = 0;
  private readonly committed = new Map<string, string>();
  private readonly skippedCounts: SkippedCounts = {};
  /**
   * The latest group membership and the partitions it holds: commits go with it (the coordinator
   * refuses an older generation's), and only for partitions still ours. Records read under an
   * older generation that are in the evaluator already are committed under the newer one.
   */
  private membership: GroupMembership | undefined;
  private assigned: Set<string> | undefined;
  private stopped = false;
  private connected = false;

  constructor(private readonly options: KafkaEvaluatorSourceOptions) {
    this.consumer = options.kafka.consumer({ groupId: options.groupId });
    this.consumer.onJoin((join) => {
      this.noteMembership({ groupId: options.groupId, memberId: join.memberId, generationId: join.generationId });
      this.assigned = new Set(join.assignment.flatMap(({ topic, partitions }) => partitions.map((p) => `${topic}\u0000${p}`)));
    });
  }

  get skipped(): Readonly<SkippedCounts> {
    return this.skippedCounts;
  }

  /** Records read again that the evaluator's state already holds (after a restart or a failed record): not handed to it. */
  get redelivered(): number {
    return this.redeliveredCount;
  }

  positions(): SourceOffset[] {
    return [...this.delivered].map(([key, next]) => {
      const [topic, partition] = key.split('\u0000') as [string, string];
      return { topic, partition: Number(partition), next };
    });
  }

  async start(handlers: Parameters<EvaluatorSource['start']>[0], resume: SourceOffset[] = []): Promise<void> {
    const { linkedTopic, goldTopic, log } = this.options;
    for (const { topic, partition, next } of resume) this.delivered.set(`${topic}\u0000${partition}`, next);
    this.connected = true;
    await this.consumer.run({
      topics: [linkedTopic, goldTopic],
      fromBeginning: this.options.fromBeginning ?? true,
      eachBatch: async (batch) => {
        const { topic, partition } = batch;
        const key = `${topic}\u0000${partition}`;
        this.noteMembership(batch.membership);
        let ignored = 0;
        try {
          for (const message of batch.messages) {
            // Stopped, or the records may be someone else's now: they come again to whoever holds them.
            if (this.stopped || batch.isStale()) return;
            // The consumer reads again from the committed offsets after a failed record or a restart;
            // what the evaluator (or the snapshot it restored) has already counted is not handed to it twice.
            const delivered = this.delivered.get(key);
            if (delivered !== undefined && BigInt(message.offset) < BigInt(delivered)) {
              ignored++;
              continue;
            }
            await this.deliver(topic, partition, message, handlers);
          }
        } finally {
          if (ignored > 0) {
            this.redeliveredCount += ignored;
            log(`evaluator: ignored ${ignored} records of ${topic}[${partition}] below offset ${this.delivered.get(key)}: the evaluator's state holds them already`);
          }
        }
      },
    });
  }

  private async deliver(topic: string, partition: number, message: InboundRecord, handlers: Parameters<EvaluatorSource['start']>[0]): Promise<void> {
    const { goldTopic, codec, log } = this.options;
    try {
      if (topic === goldTopic) handlers.gold(avroToGoldMention(await codec.decode('GoldMention', message.value, message.headers)));
      else handlers.linkedNote(avroToLinkedNote(await codec.decode('LinkedNote', message.value, message.headers)), candidatesKept(message));
    } catch (error) {
      // Retriable (registry down): throw, and the consumer reads this record again after a restart.
      if (!(error instanceof CuilinkError) || error.retriable) throw error;
      this.skippedCounts[error.code] = (this.skippedCounts[error.code] ?? 0) + 1;
      log(`evaluator: skipped ${topic}[${partition}]@${message.offset}: ${error.code}: ${error.message}`);
    }
    // No await since the handler ran: a snapshot never sees the note without its offset, or the reverse.
    this.delivered.set(`${topic}\u0000${partition}`, (BigInt(message.offset) + 1n).toString());
  }

  async commit(): Promise<void> {
    // Captured before any await: the snapshot just written covers exactly these.
    const membership = this.membership;
    const pending = [...this.delivered].filter(([key, offset]) => this.committed.get(key) !== offset && (this.assigned === undefined || this.assigned.has(key)));
    if (pending.length === 0 || !this.connected || membership === undefined) return;
    await this.consumer.commit(
      pending.map(([key, offset]) => {
        const [topic, partition] = key.split('\u0000') as [string, string];
        return { topic, partition: Number(partition), offset, membership };
      }),
    );
    for (const [key, offset] of pending) this.committed.set(key, offset);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // Waits for the batch in flight, so the last snapshot holds everything delivered; the consumer
    // stays in its group until close(), so the last commit can follow.
    if (this.connected) await this.consumer.stop();
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (!this.connected) return;
    this.connected = false;
    await this.consumer.close();
  }

  private noteMembership(membership: GroupMembership): void {
    if (this.membership === undefined || membership.generationId >= this.membership.generationId) this.membership = membership;
  }
}

/**
 * The OutputFitter's header (src/stream/output-fitter.ts): the note's candidate lists were cut to
 * this many. A value that is not a count says a cut without how deep: read as 0, every list cut.
 */
function candidatesKept(message: InboundRecord): number | undefined {
  const text = headerString(message.headers, CANDIDATES_CUT_HEADER);
  if (text === undefined) return undefined;
  const keep = Number(text);
  return Number.isInteger(keep) && keep >= 0 ? keep : 0;
}
