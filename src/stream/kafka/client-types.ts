/**
 * The stage's own Kafka client interface. Everything in cuilink that talks to Kafka (the stage, the
 * evaluator, the memory updater, the tools, the tests and benchmarks) uses these types only; the
 * implementation (platformatic-client.ts with partition-batch-consumer.ts, on @platformatic/kafka)
 * is the only code that imports a Kafka library, so a later swap touches this folder only.
 */

/** A record as read: offsets and timestamps as decimal strings (int64 does not fit a number). */
export interface InboundRecord {
  topic: string;
  partition: number;
  offset: string;
  /** Milliseconds since the epoch, as a decimal string. */
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  /** A key the record repeats holds the list of its values, in order. */
  headers: Record<string, Buffer | Buffer[]>;
}

/** A record to produce; strings are written as UTF-8. Without `partition` the key decides (murmur2, as Java's). */
export interface OutboundRecord {
  key?: string | Buffer | null;
  value: string | Buffer | null;
  headers?: Record<string, string | Buffer>;
  partition?: number;
}

export interface TopicRecords {
  topic: string;
  messages: OutboundRecord[];
}

/**
 * The group membership a record was read under (KIP-447): an offset commit, plain or inside a
 * transaction, carries it, and the coordinator refuses it once the group has moved on, so a
 * member that stalled past a rebalance can no longer commit what it read before.
 */
export interface GroupMembership {
  groupId: string;
  memberId: string;
  generationId: number;
  /** The group coordinator's broker id when the membership was read (a transactional commit goes there). */
  coordinatorId?: number;
}

/** The position to commit for one input partition (the next offset to read) and the membership it was read under. */
export interface InputCommit {
  topic: string;
  partition: number;
  offset: string;
  membership: GroupMembership;
}

/** Records of one partition handed to `eachBatch`, in offset order. */
export interface PartitionBatch {
  topic: string;
  partition: number;
  messages: InboundRecord[];
  membership: GroupMembership;
  /** The partition's high watermark when last known (for lag), or undefined. */
  highWatermark: string | undefined;
  /**
   * True once the records may belong to someone else or be read again: the group rebalanced, the
   * consumer restarted after a failure, or it is stopping. A handler takes no new record then; it
   * may finish those it took (a commit of them is refused by the coordinator if the group moved on).
   */
  isStale(): boolean;
}

export interface ConsumerRunOptions {
  topics: string[];
  /** Where a partition without a committed offset starts. */
  fromBeginning: boolean;
  /**
   * Called for one partition's records at a time; calls for one partition never overlap and come
   * in offset order. Throwing hands the records back: the consumer restarts its fetch from the
   * committed offsets (partition batches in flight go stale), so nothing is skipped.
   */
  eachBatch: (batch: PartitionBatch) => Promise<void>;
  /** How many partitions' batches run at once (default 1). */
  partitionsConcurrently?: number;
  /**
   * Where partitions start instead of the committed offsets, for a reader that commits nothing
   * (`cuilink topics read`): a restart after a failure starts there again, so the reader skips
   * what it already had. Partitions not named start as `fromBeginning` says.
   */
  startOffsets?: { topic: string; partition: number; offset: string }[];
}

export interface ConsumerJoin {
  memberId: string;
  generationId: number;
  assignment: { topic: string; partitions: number[] }[];
}

export interface KafkaConsumerClient {
  /** Joins the group and starts fetching; resolves once fetching started (batches arrive after). */
  run(options: ConsumerRunOptions): Promise<void>;
  /** Commits input positions outside a transaction (at-least-once); refused once the group moved on. */
  commit(commits: InputCommit[]): Promise<void>;
  /** Stops handing out new batches (records already fetched wait); `resume` undoes it. */
  pause(): void;
  resume(): void;
  /** When the broker last answered this consumer (a heartbeat, a join or a fetch), ms since the epoch; 0 before the first. */
  lastBrokerContactAt(): number;
  /** Called on every (re)join with the assignment, and when fetching resumes after a failure. */
  onJoin(listener: (join: ConsumerJoin) => void): void;
  /** The latest high watermark known for a partition (refreshed on a timer), if any. */
  highWatermark?(topic: string, partition: number): string | undefined;
  /**
   * The next offset this consumer fetches for a partition while none of its records waits for or
   * runs in eachBatch: every offset below it was handed over or skipped, and under read_committed
   * the skipped ones are transaction markers and aborted records, which are never handed over.
   * Undefined while records of it are pending, or before it was fetched.
   */
  settledPosition?(topic: string, partition: number): string | undefined;
  /** Called when the consumer failed; `restarting` false means it gave up for good. */
  onCrash(listener: (error: unknown, restarting: boolean) => void): void;
  /** Stops fetching and waits for the batches in flight; idempotent. */
  stop(): Promise<void>;
  /** stop(), then leaves the group and closes the connections; idempotent. */
  close(): Promise<void>;
}

export interface KafkaTransaction {
  send(request: TopicRecords): Promise<void>;
  /** Commits the consumer position inside this transaction (KIP-447: with the membership). */
  commitInput(commit: InputCommit): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

export interface ProducerOptions {
  /** Exactly-once: one transactional id per instance, stable across its restarts (fencing). */
  transactionalId?: string;
  /** Transaction timeout (ms), only with transactionalId. */
  transactionTimeoutMs?: number;
}

export interface KafkaProducerClient {
  connect(): Promise<void>;
  /** Sends one request per TopicRecords, in order, acks=all, idempotent. */
  send(requests: TopicRecords[]): Promise<void>;
  /** Begins a transaction (transactional producers only). */
  transaction(): Promise<KafkaTransaction>;
  close(): Promise<void>;
}

export interface TopicSpec {
  topic: string;
  partitions: number;
  replicationFactor: number;
  /** Topic configs, e.g. `max.message.bytes`, `retention.ms`. */
  configs?: Record<string, string>;
}

export interface TopicDescription {
  topic: string;
  partitions: number;
  replicationFactor: number;
  /** Every partition has a leader. */
  ready: boolean;
}

export interface PartitionOffsets {
  partition: number;
  /** Log start offset. */
  low: string;
  /** High watermark (next offset to be written). */
  high: string;
}

export interface KafkaAdminClient {
  listTopics(): Promise<string[]>;
  /** Creates topics that do not exist; an existing one is not an error. */
  createTopics(specs: TopicSpec[]): Promise<void>;
  deleteTopics(topics: string[]): Promise<void>;
  describeTopics(topics: string[]): Promise<TopicDescription[]>;
  /** The named configs of each topic (topic → name → value); a topic that cannot be described is absent. */
  describeTopicConfigs(topics: string[], names: string[]): Promise<Map<string, Map<string, string>>>;
  topicOffsets(topic: string): Promise<PartitionOffsets[]>;
  /** A group's committed offsets for a topic (-1 where none). */
  committedOffsets(groupId: string, topic: string): Promise<{ partition: number; offset: string }[]>;
  close(): Promise<void>;
}

export interface ConsumerOptions {
  groupId: string;
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  rebalanceTimeoutMs?: number;
  /** Bytes per partition per fetch. */
  maxBytesPerPartition?: number;
  /** Records fetched but not yet handed to eachBatch before fetching pauses (default 2,000). */
  maxBufferedRecords?: number;
  /** Only committed transactions' records (default true). */
  readCommitted?: boolean;
}

export interface KafkaClient {
  readonly clientId: string;
  admin(): KafkaAdminClient;
  producer(options?: ProducerOptions): KafkaProducerClient;
  consumer(options: ConsumerOptions): KafkaConsumerClient;
}
