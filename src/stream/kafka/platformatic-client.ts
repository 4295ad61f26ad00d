import {
  Admin,
  Consumer,
  Producer,
  compatibilityPartitioner,
  type BaseOptions,
  type Message,
  type MessageToProduce,
} from '@platformatic/kafka';
import { subscribe } from 'node:diagnostics_channel';
import type {
  ConsumerOptions,
  GroupMembership,
  InboundRecord,
  InputCommit,
  KafkaAdminClient,
  KafkaClient,
  KafkaConsumerClient,
  KafkaProducerClient,
  KafkaTransaction,
  OutboundRecord,
  PartitionOffsets,
  ProducerOptions,
  TopicDescription,
  TopicRecords,
  TopicSpec,
} from './client-types.ts';
import { asKafkaError, kafkaCall } from './kafka-errors.ts';
import { CuilinkError } from '../../kb/errors.ts';
import { PartitionBatchConsumer, type LibraryConsumer } from './partition-batch-consumer.ts';

/** What every client shares: brokers, identity, TLS/SASL and timeouts (see kafka-client.ts). */
export type ConnectionBase = Pick<BaseOptions, 'clientId' | 'bootstrapBrokers' | 'timeout' | 'retries' | 'retryDelay' | 'connectTimeout' | 'tls' | 'sasl' | 'tlsServerName'>;

type Transaction = Awaited<ReturnType<Producer['beginTransaction']>>;

/**
 * Library fault: a broker connection can emit 'error' twice (e.g. a plaintext client whose SASL
 * handshake meets a TLS listener: the closed socket fails the handshake after the pool's one-shot
 * listener is spent), and an 'error' with no listener kills the process. Every failure also
 * reaches the request's callback, which is where we report it; so each new connection gets a
 * listener that only keeps the second emit from being fatal.
 */
subscribe('plt:kafka:instances', (message) => {
  const { type, instance } = message as { type?: string; instance?: { on?: (event: 'error', listener: () => void) => void } };
  if (type === 'connection') instance?.on?.('error', () => {});
});

const TOPIC_RESOURCE = 2;
const READ_UNCOMMITTED = 0;
const READ_COMMITTED = 1;

/** The client on @platformatic/kafka: the only file that imports it besides partition-batch-consumer.ts. */
export class PlatformaticKafkaClient implements KafkaClient {
  constructor(
    private readonly base: ConnectionBase,
    /** Told when a connection to a broker fails (host:port). */
    private readonly onBrokerFailed: (broker: string) => void = () => {},
  ) {}

  private watch<T extends { on(event: 'client:broker:failed', listener: (payload: { broker: { host: string; port: number } }) => void): unknown }>(client: T): T {
    client.on('client:broker:failed', ({ broker }) => this.onBrokerFailed(`${broker.host}:${broker.port}`));
    return client;
  }

  get clientId(): string {
    return this.base.clientId;
  }

  admin(): KafkaAdminClient {
    return new PlatformaticAdmin(this.base, (c) => this.watch(c));
  }

  producer(options: ProducerOptions = {}): KafkaProducerClient {
    return new PlatformaticProducer(this.base, options, (c) => this.watch(c));
  }

  consumer(options: ConsumerOptions): KafkaConsumerClient {
    const create = (): LibraryConsumer =>
      this.watch(new Consumer({
        ...this.base,
        groupId: options.groupId,
        autocommit: false,
        autocreateTopics: false,
        isolationLevel: options.readCommitted === false ? READ_UNCOMMITTED : READ_COMMITTED,
        ...(options.sessionTimeoutMs !== undefined ? { sessionTimeout: options.sessionTimeoutMs } : {}),
        ...(options.heartbeatIntervalMs !== undefined ? { heartbeatInterval: options.heartbeatIntervalMs } : {}),
        ...(options.rebalanceTimeoutMs !== undefined ? { rebalanceTimeout: options.rebalanceTimeoutMs } : {}),
        ...(options.maxBytesPerPartition !== undefined ? { maxBytesPerPartition: options.maxBytesPerPartition } : {}),
      })) as unknown as LibraryConsumer;
    return new PartitionBatchConsumer(create, options);
  }
}

/**
 * A library message as our InboundRecord: offsets and timestamps as strings, headers as a record
 * of buffers, a key that repeats as the list of its values in order (a dead letter keeps them all).
 */
export function toInboundRecord(message: Message): InboundRecord {
  // No prototype: a header named 'constructor' or '__proto__' is just a header (a plain object
  // would find Object's members under those names and fail to encode the record's dead letter).
  const headers: Record<string, Buffer | Buffer[]> = Object.create(null);
  for (const [rawKey, rawValue] of message.headers ?? []) {
    const key = Buffer.isBuffer(rawKey) ? rawKey.toString('utf8') : String(rawKey);
    const value = Buffer.isBuffer(rawValue) ? rawValue : Buffer.from(rawValue ?? '');
    const seen = headers[key];
    headers[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return {
    topic: message.topic,
    partition: message.partition,
    offset: message.offset.toString(),
    timestamp: message.timestamp.toString(),
    key: message.key === undefined || message.key === null || (Buffer.isBuffer(message.key) && message.key.length === 0) ? null : (message.key as Buffer),
    value: message.value === undefined || message.value === null ? null : (message.value as Buffer),
    headers,
  };
}

/** The group membership a message was read under. */
export function membershipOf(message: Message): GroupMembership & { coordinatorId: number } {
  const consumer = (message.metadata as { consumer?: { groupId: string; memberId: string; generationId: number; coordinatorId: number } }).consumer!;
  return { groupId: consumer.groupId, memberId: consumer.memberId, generationId: consumer.generationId, coordinatorId: consumer.coordinatorId };
}

function toBuffer(value: string | Buffer): Buffer {
  return typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
}

function toLibraryMessage(topic: string, record: OutboundRecord): MessageToProduce {
  // Buffer keys: the library's default serializers write buffers, and a string key hangs the send.
  const headers = new Map<Buffer, Buffer>();
  for (const [key, value] of Object.entries(record.headers ?? {})) headers.set(Buffer.from(key, 'utf8'), toBuffer(value));
  return {
    topic,
    ...(record.key !== undefined && record.key !== null ? { key: toBuffer(record.key) } : {}),
    ...(record.value !== null ? { value: toBuffer(record.value) } : {}),
    headers,
    ...(record.partition !== undefined ? { partition: record.partition } : {}),
  } as MessageToProduce;
}

class PlatformaticAdmin implements KafkaAdminClient {
  private readonly admin: Admin;
  /** Offsets are a consumer API in the library: a consumer that never joins a group serves them. */
  private offsetsReader: Consumer | undefined;

  constructor(
    private readonly base: ConnectionBase,
    private readonly watch: <T extends Admin | Consumer>(client: T) => T,
  ) {
    this.admin = watch(new Admin({ ...base, autocreateTopics: false }));
  }

  listTopics(): Promise<string[]> {
    return kafkaCall('list topics', () => this.admin.listTopics());
  }

  async createTopics(specs: TopicSpec[]): Promise<void> {
    const existing = new Set(await this.listTopics());
    for (const spec of specs.filter((s) => !existing.has(s.topic))) {
      await kafkaCall(`create topic ${spec.topic}`, async () => {
        try {
          await this.admin.createTopics({
            topics: [spec.topic],
            partitions: spec.partitions,
            replicas: spec.replicationFactor,
            configs: Object.entries(spec.configs ?? {}).map(([name, value]) => ({ name, value })),
          });
        } catch (error) {
          // Another instance created it meanwhile: what was asked for exists.
          if (!JSON.stringify((error as { errors?: unknown }).errors ?? '').includes('TOPIC_ALREADY_EXISTS') && !String((error as Error).message).includes('already exists')) throw error;
        }
      });
    }
  }

  async deleteTopics(topics: string[]): Promise<void> {
    if (topics.length > 0) await kafkaCall('delete topics', () => this.admin.deleteTopics({ topics }));
  }

  async describeTopics(topics: string[]): Promise<TopicDescription[]> {
    const metadata = await kafkaCall('describe topics', () => this.admin.metadata({ topics, forceUpdate: true }));
    return topics.flatMap((topic) => {
      const t = metadata.topics.get(topic);
      if (t === undefined) return [];
      return [{ topic, partitions: t.partitionsCount, replicationFactor: t.partitions[0]?.replicas.length ?? 0, ready: t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0) }];
    });
  }

  async describeTopicConfigs(topics: string[], names: string[]): Promise<Map<string, Map<string, string>>> {
    const described = await kafkaCall('describe topic configs', () =>
      this.admin.describeConfigs({ resources: topics.map((resourceName) => ({ resourceType: TOPIC_RESOURCE, resourceName, configurationKeys: names })) }),
    );
    const result = new Map<string, Map<string, string>>();
    for (const resource of described) {
      const values = new Map<string, string>();
      for (const config of resource.configs) if (config.value !== null && config.value !== undefined) values.set(config.name, config.value);
      result.set(resource.resourceName, values);
    }
    return result;
  }

  async topicOffsets(topic: string): Promise<PartitionOffsets[]> {
    this.offsetsReader ??= this.watch(new Consumer({ ...this.base, groupId: `cuilink-offsets-${process.pid}`, autocreateTopics: false }));
    const reader = this.offsetsReader;
    const [low, high] = await kafkaCall(`offsets of ${topic}`, () =>
      Promise.all([reader.listOffsets({ topics: [topic], timestamp: -2n, isolationLevel: READ_UNCOMMITTED }), reader.listOffsets({ topics: [topic], timestamp: -1n, isolationLevel: READ_UNCOMMITTED })]),
    );
    const highs = high.get(topic) ?? [];
    const lows = low.get(topic) ?? [];
    return highs.map((h, partition) => ({ partition, low: String(lows[partition] ?? 0n), high: String(h) }));
  }

  async committedOffsets(groupId: string, topic: string): Promise<{ partition: number; offset: string }[]> {
    const partitions = (await this.describeTopics([topic]))[0]?.partitions ?? 0;
    const groups = await kafkaCall(`committed offsets of ${groupId}`, () =>
      this.admin.listConsumerGroupOffsets({ groups: [{ groupId, topics: [{ name: topic, partitionIndexes: Array.from({ length: partitions }, (_, i) => i) }] }] }),
    );
    const found = groups[0]?.topics.find((t) => t.name === topic)?.partitions ?? [];
    return Array.from({ length: partitions }, (_, partition) => ({ partition, offset: String(found.find((p) => p.partitionIndex === partition)?.committedOffset ?? -1n) }));
  }

  async close(): Promise<void> {
    await Promise.all([this.admin.close().catch(() => {}), closeConsumer(this.offsetsReader)]);
  }
}

class PlatformaticProducer implements KafkaProducerClient {
  private readonly producer: Producer;
  /** The transaction begun by connect() (which registered the transactional id), handed out first. */
  private first: Transaction | undefined;
  /** Answers "does this topic exist" (see requireTopic); made on first use. */
  private checker: Admin | undefined;

  constructor(
    private readonly base: ConnectionBase,
    private readonly options: ProducerOptions,
    watch: (client: Producer) => Producer,
  ) {
    this.producer = watch(new Producer({
      ...base,
      // The library sends the request timeout as the transaction timeout (InitProducerId): a
      // transactional producer takes the configured transaction timeout as both.
      ...(options.transactionalId !== undefined ? { transactionalId: options.transactionalId, timeout: Math.max(options.transactionTimeoutMs ?? 60_000, base.timeout ?? 0) } : {}),
      idempotent: true,
      // Without these the library's InitProducerId claims producer 0 epoch 0, which the broker
      // answers PRODUCER_FENCED once the transactional id exists: a restarted instance could
      // never take its own id back. -1/-1 asks for the id afresh (and fences the old holder).
      producerId: -1n,
      producerEpoch: -1,
      autocreateTopics: false,
      partitioner: compatibilityPartitioner,
    }));
  }

  async connect(): Promise<void> {
    // Registers the producer id now, not at the first send; with a transactional id this fences
    // an older instance holding it (its open transaction is aborted, its next write refused).
    if (this.options.transactionalId === undefined) await kafkaCall('init producer', () => this.producer.initIdempotentProducer({}));
    else this.first = await kafkaCall('begin transaction', () => this.producer.beginTransaction());
  }

  async send(requests: TopicRecords[]): Promise<void> {
    for (const { topic, messages } of requests) {
      if (messages.length === 0) continue;
      await requireTopic(this.topicChecker(), topic);
      await kafkaCall(`produce to ${topic}`, () => this.producer.send({ messages: messages.map((m) => toLibraryMessage(topic, m)), acks: -1 }));
    }
  }

  async transaction(): Promise<KafkaTransaction> {
    if (this.options.transactionalId === undefined) throw new Error('transaction() on a producer without a transactional id');
    const transaction = this.first ?? (await kafkaCall('begin transaction', () => this.producer.beginTransaction()));
    this.first = undefined;
    return new PlatformaticTransaction(transaction, this.topicChecker());
  }

  private topicChecker(): Admin {
    this.checker ??= new Admin({ ...this.base, autocreateTopics: false });
    return this.checker;
  }

  async close(): Promise<void> {
    await Promise.all([this.producer.close().catch(() => {}), this.checker?.close().catch(() => {})]);
  }
}

class PlatformaticTransaction implements KafkaTransaction {
  private readonly groups = new Set<string>();
  /** Something reached the broker: an empty transaction is only cancelled (the broker refuses to end one it never saw). */
  private touched = false;

  constructor(
    private readonly transaction: Transaction,
    private readonly checker: Admin,
  ) {}

  async send({ topic, messages }: TopicRecords): Promise<void> {
    if (messages.length === 0) return;
    await requireTopic(this.checker, topic);
    this.touched = true;
    await kafkaCall(`produce to ${topic} in a transaction`, () => this.transaction.send({ messages: messages.map((m) => toLibraryMessage(topic, m)), acks: -1 }));
  }

  async commitInput(commit: InputCommit): Promise<void> {
    const { membership } = commit;
    this.touched = true;
    if (!this.groups.has(membership.groupId)) {
      await kafkaCall('add the group to the transaction', () => this.transaction.addConsumer({ groupId: membership.groupId } as unknown as Consumer));
      this.groups.add(membership.groupId);
    }
    // The library commits `offset + 1` of the message it is given, with its consumer metadata (KIP-447).
    const message = { topic: commit.topic, partition: commit.partition, offset: BigInt(commit.offset) - 1n, metadata: { consumer: membership } } as unknown as Message;
    await kafkaCall(`commit ${commit.topic}/${commit.partition} in the transaction`, () => this.transaction.addOffset(message));
  }

  async commit(): Promise<void> {
    if (!this.touched) await kafkaCall('cancel empty transaction', () => this.transaction.cancel());
    else await kafkaCall('commit transaction', () => this.transaction.commit());
  }

  async abort(): Promise<void> {
    if (this.transaction.completed) return;
    if (!this.touched) await kafkaCall('cancel empty transaction', () => this.transaction.cancel());
    else await kafkaCall('abort transaction', () => this.transaction.abort());
  }
}

/** Closes a library consumer (leaving its group); failures are ignored: it is going away. */
export function closeConsumer(consumer: Consumer | undefined): Promise<void> {
  return new Promise<void>((resolve) => (consumer === undefined ? resolve() : consumer.close(true, () => resolve())));
}

/**
 * Fails when `topic` does not exist. The library's idempotent producer never settles a send (nor a
 * metadata request) for a missing topic, so a deleted output topic would hang the stage; a plain
 * client's metadata call (cached for metadataMaxAge) refuses it at once.
 */
async function requireTopic(checker: Admin, topic: string): Promise<void> {
  try {
    await checker.metadata({ topics: [topic] });
  } catch (error) {
    if (/unknown topic/i.test((error as Error)?.message ?? '')) throw new CuilinkError('KAFKA_UNKNOWN_TOPIC_OR_PARTITION', `produce to ${topic}: the topic does not exist`, { retriable: true, cause: error });
    throw asKafkaError(error, `metadata of ${topic}`);
  }
}
