import { InputError } from '../kb/errors.ts';
import { parseLinkConfig } from '../link/link-config.ts';
import type { KafkaClient, TopicDescription } from './kafka/client-types.ts';
import type { StageConfig } from './stage-config.ts';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from './topic-size-limits.ts';
import { waitForTopicLeaders } from './topics.ts';

/**
 * The topics the stage, the evaluator and the memory updater use, computed from the stage config
 * (`cuilink topics create|describe`, `cuilink run --create-topics`), with the settings they are
 * created with. docs/topics.md has the table of defaults; keep the two in step.
 */

const DAY_MS = 86_400_000;

export const TOPIC_DEFAULTS = {
  /** Local use: a few partitions, so that up to 3 stage instances share the input. */
  partitions: 3,
  /** Local use: the development broker is one node. Production: 3. */
  replicationFactor: 1,
  /** The input-side topics' limit: Kafka's own default. */
  maxMessageBytes: KAFKA_DEFAULT_MAX_MESSAGE_BYTES,
  /** Kafka's own default (7 days). */
  retentionMs: 7 * DAY_MS,
  /** Dead letters wait for a person: 30 days. */
  deadLetterRetentionMs: 30 * DAY_MS,
  /** The evaluator's and memory updater's `--gold-topic` default. */
  goldTopic: 'cuilink.gold',
} as const;

/** A dead letter carries the whole original record plus its envelope (reason, source offsets, headers). */
export const DEAD_LETTER_HEADROOM_BYTES = 65_536;
/** Upper bounds of an encoded LinkedNote's parts (Avro, generous: long concept names, several semantic types). */
const LINKED_NOTE_BASE_BYTES = 1024;
const LINKED_MENTION_BYTES = 256;
const LINKED_CANDIDATE_BYTES = 256;
const MIB = 1_048_576;

export const TOPIC_LIMITS = {
  partitions: { min: 1, max: 10_000 },
  replicationFactor: { min: 1, max: 32_767 },
  maxMessageBytes: { min: 4096, max: 104_857_600 },
} as const;

export type TopicRole = 'input' | 'output' | 'deadLetter' | 'review' | 'labelRequests' | 'measureRequests' | 'gold' | 'replayLedger';

export interface TopicSettings {
  partitions: number;
  replicationFactor: number;
  maxMessageBytes: number;
  /** -1 keeps records forever. */
  retentionMs: number;
  /** `compact`: the latest record per key is kept for good (cleanup.policy); otherwise the broker's default (delete). */
  cleanupPolicy?: 'compact';
}

export interface PlannedTopic extends TopicSettings {
  topic: string;
  role: TopicRole;
  /** Which processes read or write it. */
  usedBy: string[];
}

export interface TopicPlanOptions {
  partitions?: number;
  replicationFactor?: number;
  /** The input-side topics' max.message.bytes; the output gets at least the LinkedNote estimate, the dead-letter topic this plus headroom. */
  maxMessageBytes?: number;
  retentionMs?: number;
  deadLetterRetentionMs?: number;
  /** The gold topic of the evaluator, memory updater and gold-sample; null: none. */
  goldTopic?: string | null;
}

const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;

/**
 * An upper bound of the largest LinkedNote the stage produces under this config (a note with
 * limits.maxMentionsPerNote mentions, each with link.topK candidates): the output topic's
 * max.message.bytes at which no candidate list is ever cut (docs/stream.md, "Record sizes").
 */
export function linkedNoteBytesEstimate(config: StageConfig): number {
  const { topK } = parseLinkConfig(config.link, 'config link');
  return LINKED_NOTE_BASE_BYTES + config.limits.maxMentionsPerNote * (LINKED_MENTION_BYTES + topK * LINKED_CANDIDATE_BYTES);
}

/** Every topic the stage config implies (plus the gold topic), in a stable order, with the settings to create it with. */
export function planTopics(config: StageConfig, options: TopicPlanOptions = {}): PlannedTopic[] {
  const partitions = options.partitions ?? TOPIC_DEFAULTS.partitions;
  const replicationFactor = options.replicationFactor ?? TOPIC_DEFAULTS.replicationFactor;
  const base = options.maxMessageBytes ?? TOPIC_DEFAULTS.maxMessageBytes;
  const retentionMs = options.retentionMs ?? TOPIC_DEFAULTS.retentionMs;
  const configured = config.topics.maxMessageBytes ?? 0;
  const outputBytes = Math.min(TOPIC_LIMITS.maxMessageBytes.max, Math.max(base, configured, Math.ceil(linkedNoteBytesEstimate(config) / MIB) * MIB));
  const deadLetterBytes = Math.min(TOPIC_LIMITS.maxMessageBytes.max, Math.max(base + DEAD_LETTER_HEADROOM_BYTES, configured));
  const common = { partitions, replicationFactor, retentionMs };
  const t = config.topics;
  const goldTopic = options.goldTopic === undefined ? TOPIC_DEFAULTS.goldTopic : options.goldTopic;
  const plan: PlannedTopic[] = [
    { topic: t.input, role: 'input', usedBy: ['stage', 'memory updater'], ...common, maxMessageBytes: base },
    { topic: t.output, role: 'output', usedBy: ['stage', 'evaluator'], ...common, maxMessageBytes: outputBytes },
    { topic: t.deadLetter, role: 'deadLetter', usedBy: ['stage'], ...common, maxMessageBytes: deadLetterBytes, retentionMs: options.deadLetterRetentionMs ?? TOPIC_DEFAULTS.deadLetterRetentionMs },
  ];
  if (t.review !== undefined) plan.push({ topic: t.review, role: 'review', usedBy: ['stage'], ...common, maxMessageBytes: base });
  if (t.labelRequests !== undefined) plan.push({ topic: t.labelRequests, role: 'labelRequests', usedBy: ['stage', 'annotate'], ...common, maxMessageBytes: base });
  if (t.measureRequests !== undefined) plan.push({ topic: t.measureRequests, role: 'measureRequests', usedBy: ['stage', 'annotate'], ...common, maxMessageBytes: base });
  if (goldTopic !== null) {
    if (!TOPIC_NAME.test(goldTopic)) throw new InputError(`--gold-topic '${goldTopic}': a topic name is 1-249 of [A-Za-z0-9._-] (or 'none')`, 'BAD_FLAGS');
    const clash = plan.find((p) => p.topic === goldTopic);
    if (clash) throw new InputError(`--gold-topic ${goldTopic} is the stage's ${clash.role} topic; the gold topic must be its own`, 'BAD_FLAGS');
    plan.push({ topic: goldTopic, role: 'gold', usedBy: ['evaluator', 'memory updater', 'gold-sample'], ...common, maxMessageBytes: base });
  }
  return plan;
}

/**
 * The replay ledger of `cuilink dlq replay` (src/stream/replay-ledger.ts), made by its first
 * `--execute` rather than by `topics create`: it is not in planTopics, so a deployment that never
 * replays is not told it misses one. Compacted: one small record per dead letter ever replayed,
 * kept as long as the dead letters are (and longer: a key is all it costs). One partition: keys
 * need no spreading at that size. Replicated as the dead-letter topic is, which the command reads.
 */
export function replayLedgerTopic(topic: string, replicationFactor: number): PlannedTopic {
  return { topic, role: 'replayLedger', usedBy: ['dlq replay'], partitions: 1, replicationFactor, maxMessageBytes: TOPIC_DEFAULTS.maxMessageBytes, retentionMs: -1, cleanupPolicy: 'compact' };
}

/** The topic configs a planned topic is created with. */
export function topicConfigs(planned: TopicSettings): Record<string, string> {
  return { 'max.message.bytes': String(planned.maxMessageBytes), 'retention.ms': String(planned.retentionMs), ...(planned.cleanupPolicy === undefined ? {} : { 'cleanup.policy': planned.cleanupPolicy }) };
}

export interface TopicState {
  planned: PlannedTopic;
  exists: boolean;
  partitions?: number;
  replicationFactor?: number;
  /** Every partition has a leader. */
  ready?: boolean;
  maxMessageBytes?: string;
  retentionMs?: string;
  /** Records on the topic (high watermark − log start, summed; transaction markers count too), when asked. */
  records?: number;
}

/** What the brokers hold of the planned topics: partitions, replication, max.message.bytes, retention.ms (and records with `records`). */
export async function describePlannedTopics(kafka: KafkaClient, plan: PlannedTopic[], options: { records?: boolean } = {}): Promise<TopicState[]> {
  const admin = kafka.admin();
  try {
    const existing = new Set(await admin.listTopics());
    const present = plan.filter((p) => existing.has(p.topic)).map((p) => p.topic);
    const described = new Map<string, TopicDescription>(present.length === 0 ? [] : (await admin.describeTopics(present)).map((d) => [d.topic, d]));
    const configs = present.length === 0 ? new Map<string, Map<string, string>>() : await admin.describeTopicConfigs(present, ['max.message.bytes', 'retention.ms']);
    const states: TopicState[] = [];
    for (const planned of plan) {
      if (!existing.has(planned.topic)) {
        states.push({ planned, exists: false });
        continue;
      }
      const d = described.get(planned.topic);
      const c = configs.get(planned.topic);
      const state: TopicState = { planned, exists: true, partitions: d?.partitions, replicationFactor: d?.replicationFactor, ready: d?.ready, maxMessageBytes: c?.get('max.message.bytes'), retentionMs: c?.get('retention.ms') };
      if (options.records) state.records = (await admin.topicOffsets(planned.topic)).reduce((sum, p) => sum + Number(BigInt(p.high) - BigInt(p.low)), 0);
      states.push(state);
    }
    return states;
  } finally {
    await admin.close();
  }
}

export interface CreateReport {
  state: TopicState;
  /** Created now (false: it existed and was left alone). */
  created: boolean;
  /** Where an existing topic differs from the plan in a way that matters (never changed). */
  notes: string[];
}

/**
 * Creates the planned topics that do not exist, waits for their partition leaders, and reports
 * every topic as it stands. An existing topic is never altered; fewer partitions or a lower
 * max.message.bytes than planned is only reported.
 */
export async function createPlannedTopics(kafka: KafkaClient, plan: PlannedTopic[], options: { leaderTimeoutMs?: number } = {}): Promise<CreateReport[]> {
  const before = await describePlannedTopics(kafka, plan);
  const missing = before.filter((s) => !s.exists).map((s) => s.planned);
  if (missing.length > 0) {
    const admin = kafka.admin();
    try {
      await admin.createTopics(missing.map((p) => ({ topic: p.topic, partitions: p.partitions, replicationFactor: p.replicationFactor, configs: topicConfigs(p) })));
      await waitForTopicLeaders(admin, missing.map((p) => p.topic), options.leaderTimeoutMs ?? 60_000);
    } finally {
      await admin.close();
    }
  }
  const after = missing.length === 0 ? before : await describePlannedTopics(kafka, plan);
  const created = new Set(missing.map((p) => p.topic));
  return after.map((state) => ({ state, created: created.has(state.planned.topic), notes: created.has(state.planned.topic) ? [] : differences(state) }));
}

/** Where an existing topic falls short of its plan (reported, never changed). */
export function differences(state: TopicState): string[] {
  const notes: string[] = [];
  const p = state.planned;
  if (state.partitions !== undefined && state.partitions < p.partitions) notes.push(`fewer partitions than the ${p.partitions} asked (not changed)`);
  const bytes = Number(state.maxMessageBytes);
  if (state.maxMessageBytes !== undefined && Number.isFinite(bytes) && bytes < p.maxMessageBytes) {
    const effect = p.role === 'output' ? ': large LinkedNotes get their candidate lists cut' : p.role === 'deadLetter' ? ': large originals are cut in dead letters' : '';
    notes.push(`max.message.bytes below the ${p.maxMessageBytes} planned${effect} (not changed)`);
  }
  return notes;
}

const ROLE_NAMES: Record<TopicRole, string> = { input: 'input', output: 'output', deadLetter: 'dead-letter', review: 'review', labelRequests: 'label-requests', measureRequests: 'measure-requests', gold: 'gold', replayLedger: 'replay ledger' };

/** `cuilink.notes (input: stage, memory updater)` */
export function topicLabel(p: PlannedTopic): string {
  return `${p.topic} (${ROLE_NAMES[p.role]}: ${p.usedBy.join(', ')})`;
}

/** `partitions 3, replication 1, max.message.bytes 1048588, retention.ms 604800000` */
export function settingsText(s: { partitions?: number; replicationFactor?: number; maxMessageBytes?: number | string; retentionMs?: number | string; cleanupPolicy?: string }): string {
  const show = (v: number | string | undefined) => (v === undefined ? '?' : String(v));
  return `partitions ${show(s.partitions)}, replication ${show(s.replicationFactor)}, max.message.bytes ${show(s.maxMessageBytes)}, retention.ms ${show(s.retentionMs)}${s.cleanupPolicy === undefined ? '' : `, cleanup.policy ${s.cleanupPolicy}`}`;
}
