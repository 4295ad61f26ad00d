import type { Consumer, Kafka } from 'kafkajs';
import { CuilinkError } from '../../kb/errors.ts';
import { avroToLinkedNote } from '../../stream/avro/avro-conversions.ts';
import type { RecordCodec } from '../../stream/avro/record-codec.ts';
import { avroToGoldMention } from '../gold-avro.ts';
import type { EvaluatorSource } from './evaluator-service.ts';

export interface KafkaEvaluatorSourceOptions {
  kafka: Kafka;
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
 * state a restart restores. stop() stops delivering but stays in the group so the final commit
 * can follow; close() leaves.
 */
export class KafkaEvaluatorSource implements EvaluatorSource {
  private readonly consumer: Consumer;
  /** Next offset to consume per "topic\0partition", for everything handed to the evaluator. */
  private readonly delivered = new Map<string, string>();
  private readonly committed = new Map<string, string>();
  private readonly skippedCounts: SkippedCounts = {};
  private stopped = false;
  private connected = false;

  constructor(private readonly options: KafkaEvaluatorSourceOptions) {
    this.consumer = options.kafka.consumer({ groupId: options.groupId, allowAutoTopicCreation: false });
  }

  get skipped(): Readonly<SkippedCounts> {
    return this.skippedCounts;
  }

  async start(handlers: Parameters<EvaluatorSource['start']>[0]): Promise<void> {
    const { linkedTopic, goldTopic, codec, log } = this.options;
    await this.consumer.connect();
    this.connected = true;
    await this.consumer.subscribe({ topics: [linkedTopic, goldTopic], fromBeginning: this.options.fromBeginning ?? true });
    await this.consumer.run({
      autoCommit: false,
      eachMessage: async ({ topic, partition, message }) => {
        if (this.stopped) return;
        try {
          if (topic === goldTopic) handlers.gold(avroToGoldMention(await codec.decode('GoldMention', message.value, message.headers)));
          else handlers.linkedNote(avroToLinkedNote(await codec.decode('LinkedNote', message.value, message.headers)));
        } catch (error) {
          // Retriable (registry down): throw, and kafkajs redelivers this record after a backoff.
          if (!(error instanceof CuilinkError) || error.retriable) throw error;
          this.skippedCounts[error.code] = (this.skippedCounts[error.code] ?? 0) + 1;
          log(`evaluator: skipped ${topic}[${partition}]@${message.offset}: ${error.code}: ${error.message}`);
        }
        this.delivered.set(`${topic}\u0000${partition}`, (BigInt(message.offset) + 1n).toString());
      },
    });
  }

  async commit(): Promise<void> {
    // Captured before any await: the snapshot just written covers exactly these.
    const pending = [...this.delivered].filter(([key, offset]) => this.committed.get(key) !== offset);
    if (pending.length === 0 || !this.connected) return;
    await this.consumer.commitOffsets(
      pending.map(([key, offset]) => {
        const [topic, partition] = key.split('\u0000') as [string, string];
        return { topic, partition: Number(partition), offset };
      }),
    );
    for (const [key, offset] of pending) this.committed.set(key, offset);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.connected) this.consumer.pause([{ topic: this.options.linkedTopic }, { topic: this.options.goldTopic }]);
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (!this.connected) return;
    this.connected = false;
    await this.consumer.disconnect();
  }
}
