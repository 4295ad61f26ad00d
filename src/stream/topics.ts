import type { Kafka } from 'kafkajs';
import { CuilinkError } from '../kb/errors.ts';

/** Creates the topics that do not exist yet (the development broker, tests); existing ones are left alone. */
export async function ensureTopics(kafka: Kafka, topics: string[], options: { partitions: number; replicationFactor?: number }): Promise<string[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) {
      await admin.createTopics({ waitForLeaders: true, topics: missing.map((topic) => ({ topic, numPartitions: options.partitions, replicationFactor: options.replicationFactor ?? 1 })) });
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
