import { CuilinkError } from '../kb/errors.ts';
import type { KafkaAdminClient, KafkaClient } from './kafka/client-types.ts';

/** Creates the topics that do not exist yet (the development broker, tests); existing ones are left alone. */
export async function ensureTopics(kafka: KafkaClient, topics: string[], options: { partitions: number; replicationFactor?: number; leaderTimeoutMs?: number; configs?: Record<string, string> }): Promise<string[]> {
  const admin = kafka.admin();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) {
      await admin.createTopics(missing.map((topic) => ({ topic, partitions: options.partitions, replicationFactor: options.replicationFactor ?? 1, ...(options.configs ? { configs: options.configs } : {}) })));
      // A KRaft broker under load answers UNKNOWN_TOPIC_OR_PARTITION until the new topic's metadata has propagated.
      await waitForTopicLeaders(admin, missing, options.leaderTimeoutMs ?? 60_000);
    }
    return missing;
  } finally {
    await admin.close();
  }
}

/** Topics a process needs are missing: the message says how to create them (`cuilink topics create`). */
export class TopicMissingError extends CuilinkError {
  constructor(
    readonly missing: string[],
    /** How to create them, e.g. `'cuilink topics create --config stage.json'`. */
    readonly how = "'cuilink topics create' (with the same --config and CUILINK_* settings as the stage; docs/topics.md)",
  ) {
    super('TOPIC_MISSING', `topic(s) ${missing.join(', ')} do not exist on the brokers; create them with ${how}`);
    this.name = 'TopicMissingError';
  }
}

/** Fails fast, naming them, when topics the stage needs are missing (it never auto-creates them). */
export async function requireTopics(kafka: KafkaClient, topics: string[]): Promise<void> {
  const admin = kafka.admin();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) throw new TopicMissingError(missing);
  } finally {
    await admin.close();
  }
}

/** Polls metadata until every partition of the topics has a leader; retriable errors are waited out. */
export async function waitForTopicLeaders(admin: KafkaAdminClient, topics: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const described = await admin.describeTopics(topics);
      if (described.length === topics.length && described.every((t) => t.partitions > 0 && t.ready)) return;
    } catch (error) {
      if ((error as { retriable?: boolean }).retriable !== true) throw error;
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new CuilinkError('TOPIC_NOT_READY', `topic(s) ${topics.join(', ')} have no partition leaders after ${timeoutMs} ms${lastError ? ` (${(lastError as Error).message})` : ''}`, { retriable: true });
}
