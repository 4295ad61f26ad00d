import type { Consumer, Producer, TopicMessages } from 'kafkajs';
import type { StageConfig } from './stage-config.ts';

/** The offset to commit for one partition: the next record to read. */
export interface PartitionCommit {
  topic: string;
  partition: number;
  offset: string;
}

/**
 * Writes a partition's outputs and commits its input offset, in that order, as one step:
 * at-least-once sends (idempotent producer, acks=all) and commits once the send is acknowledged;
 * exactly-once sends and commits inside one Kafka transaction. Steps are serialized: one
 * transaction at a time per producer, and per-partition output order is the call order.
 */
export class OutputDelivery {
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly producer: Producer,
    private readonly consumer: Consumer,
    private readonly config: Pick<StageConfig, 'delivery' | 'groupId'>,
  ) {}

  deliver(topicMessages: TopicMessages[], commit: PartitionCommit): Promise<void> {
    const step = this.tail.then(() => (this.config.delivery === 'exactly-once' ? this.transactional(topicMessages, commit) : this.atLeastOnce(topicMessages, commit)));
    this.tail = step.catch(() => {});
    return step;
  }

  private async atLeastOnce(topicMessages: TopicMessages[], commit: PartitionCommit): Promise<void> {
    if (topicMessages.length > 0) await this.producer.sendBatch({ topicMessages, acks: -1 });
    await this.consumer.commitOffsets([commit]);
  }

  private async transactional(topicMessages: TopicMessages[], commit: PartitionCommit): Promise<void> {
    const transaction = await this.producer.transaction();
    try {
      if (topicMessages.length > 0) await transaction.sendBatch({ topicMessages, acks: -1 });
      await transaction.sendOffsets({ consumerGroupId: this.config.groupId, topics: [{ topic: commit.topic, partitions: [{ partition: commit.partition, offset: commit.offset }] }] });
      await transaction.commit();
    } catch (error) {
      if (transaction.isActive()) await transaction.abort().catch(() => {});
      throw error;
    }
  }
}
