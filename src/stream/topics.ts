import type { Admin, Kafka } from 'kafkajs';
import { CuilinkError } from '../kb/errors.ts';

/** Creates the topics that do not exist yet (the development broker, tests); existing ones are left alone. */
export async function ensureTopics(kafka: Kafka, topics: string[], options: { partitions: number; replicationFactor?: number; leaderTimeoutMs?: number }): Promise<string[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) {
      // kafkajs' own waitForLeaders retries LEADER_NOT_AVAILABLE only; a KRaft broker under load
      // also answers UNKNOWN_TOPIC_OR_PARTITION until the new topic's metadata has propagated.
      await admin.createTopics({ waitForLeaders: false, topics: missing.map((topic) => ({ topic, numPartitions: options.partitions, replicationFactor: options.replicationFactor ?? 1 })) });
      await waitForLeaders(admin, missing, options.leaderTimeoutMs ?? 60_000);
    }
    return missing;
  } finally {
    await admin.disconnect();
  }
}

/** Fails fast, naming them, when topics the stage needs are missing (it never auto-creates them). */
export async function requireTopics(kafka: Kafka, topics: string[]): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) throw new CuilinkError('TOPIC_MISSING', `topic(s) ${missing.join(', ')} do not exist on the brokers; create them first`);
  } finally {
    await admin.disconnect();
  }
}

/** Polls metadata until every partition of the topics has a leader; retriable errors are waited out. */
async function waitForLeaders(admin: Admin, topics: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
      if (metadata.length === topics.length && metadata.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (error) {
      if ((error as { retriable?: boolean }).retriable !== true) throw error;
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new CuilinkError('TOPIC_NOT_READY', `topic(s) ${topics.join(', ')} have no partition leaders after ${timeoutMs} ms${lastError ? ` (${(lastError as Error).message})` : ''}`, { retriable: true });
}
