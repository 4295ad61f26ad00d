import { CuilinkError, InputError } from '../kb/errors.ts';
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

/**
 * A topic the operator named with a flag (`--topic`) is missing: a typo more likely than a topic
 * to create, so the message points at the flag and the existing topics whose names are close.
 */
export class FlaggedTopicMissingError extends InputError {
  constructor(
    readonly topic: string,
    readonly flag: string,
    readonly similar: string[],
  ) {
    super(`${flag} ${topic}: no such topic on the brokers; check ${flag} (${similar.length > 0 ? `similar: ${similar.join(', ')}` : 'no topic there has a similar name'})`, 'TOPIC_MISSING');
    this.name = 'FlaggedTopicMissingError';
  }
}

/**
 * Fails fast, naming them, when needed topics are missing (it never creates them). `flags`: the
 * topics given by a flag, and the flag; one of those missing is reported first, as a typo.
 */
export async function requireTopics(kafka: KafkaClient, topics: string[], flags: ReadonlyMap<string, string> = new Map()): Promise<void> {
  const admin = kafka.admin();
  let existing: string[];
  try {
    existing = await admin.listTopics();
  } finally {
    await admin.close();
  }
  const missing = topics.filter((t) => !existing.includes(t));
  const mistyped = missing.find((t) => flags.has(t));
  if (mistyped !== undefined) throw new FlaggedTopicMissingError(mistyped, flags.get(mistyped)!, similarTopicNames(mistyped, existing));
  if (missing.length > 0) throw new TopicMissingError(missing);
}

/** Up to five existing topics within a few edits of `name` (a fifth of its length, at least 2), closest first; the broker's own (`__…`) left out. */
export function similarTopicNames(name: string, existing: readonly string[]): string[] {
  const limit = Math.max(2, Math.floor(name.length / 5));
  return existing
    .filter((t) => !t.startsWith('__') && Math.abs(t.length - name.length) <= limit)
    .map((t) => ({ t, d: editDistance(name, t) }))
    .filter(({ d }) => d <= limit)
    .sort((a, b) => a.d - b.d || (a.t < b.t ? -1 : 1))
    .slice(0, 5)
    .map(({ t }) => t);
}

/** Levenshtein distance, a swap of neighbours counting one edit (the commonest typo). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
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
