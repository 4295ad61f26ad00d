import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LinkedNote, LinkingCore, NoteInput } from '../../../src/link/types.ts';
import type { InboundRecord, KafkaAdminClient, KafkaClient, KafkaConsumerClient, KafkaProducerClient, PartitionBatch, TopicRecords } from '../../../src/stream/kafka/client-types.ts';
import { LinkingStage } from '../../../src/stream/linking-stage.ts';
import { loadStageConfig } from '../../../src/stream/stage-config.ts';
import type { StageCodec } from '../../../src/stream/stage-codec.ts';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES, recordBytes, TopicSizeLimits } from '../../../src/stream/topic-size-limits.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import type { StageMetrics } from '../../../src/telemetry/stage-metrics.ts';

// The review and label-request topics' max.message.bytes are read at start like the output's:
// before, their records were fitted against Kafka's default until the broker refused one, so a
// larger review topic lost records it could take and a smaller one cost a refused produce first.

const REVIEW = 'cuilink.review';
const MEASURE = 'cuilink.measure-requests';
const logger = createLogger({ level: 'error', sink: () => {} });

function configWith(overrides: Record<string, unknown> = {}) {
  return loadStageConfig({ env: { CUILINK_REVIEW_TOPIC: REVIEW, CUILINK_MEASURE_TOPIC: MEASURE }, overrides: { brokers: ['127.0.0.1:1'], ...overrides } });
}

/** A broker holding every topic with `limits` (Kafka's default for the others): describeConfigs answers them, or refuses when `describeRefused`; a produce over a topic's limit is refused as Kafka does. */
function fakeBroker(limits: Map<string, number>, options: { describeRefused?: boolean } = {}) {
  const described: string[][] = [];
  const sent: TopicRecords[] = [];
  let refused = 0;
  const limitOf = (topic: string) => limits.get(topic) ?? KAFKA_DEFAULT_MAX_MESSAGE_BYTES;
  const admin = {
    async listTopics() {
      return [...limits.keys()];
    },
    async describeTopicConfigs(topics: string[]) {
      described.push(topics);
      if (options.describeRefused) throw Object.assign(new Error('not authorized to describe configs'), { code: 'TOPIC_AUTHORIZATION_FAILED' });
      return new Map(topics.map((t) => [t, new Map([['max.message.bytes', String(limitOf(t))]])]));
    },
    async close() {},
  } as unknown as KafkaAdminClient;
  const producer: KafkaProducerClient = {
    async connect() {},
    async send(requests) {
      for (const { topic, messages } of requests) {
        if (messages.reduce((sum, m) => sum + recordBytes(m), 61) > limitOf(topic)) {
          refused++;
          throw Object.assign(new Error(`${topic}: over max.message.bytes`), { code: 'KAFKA_MESSAGE_TOO_LARGE' });
        }
      }
      sent.push(...requests);
    },
    transaction() {
      throw new Error('not transactional');
    },
    async close() {},
  };
  const kafka = { admin: () => admin, producer: () => producer } as unknown as KafkaClient;
  return { kafka, described, sent, refused: () => refused };
}

/** One NIL mention, so that every linked note has one review record. */
const linker: LinkingCore = {
  versions: { linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i' },
  async linkNotes(notes: NoteInput[]): Promise<LinkedNote[]> {
    return notes.map((n) => ({
      noteId: n.noteId, linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 1,
      mentions: [{ mentionId: 'm0', start: 0, end: 5, label: 'Phenotype', conceptId: null, conceptName: null, semanticTypes: [], score: 0, confidence: null, via: null, nil: true, reranked: false, candidates: [] }],
    }));
  },
  async probe() {},
  async close() {},
};

/** JSON in and out; a review record of `reviewBytes`. */
function codecWithReviewOf(reviewBytes: number): StageCodec {
  return {
    decodeNote: async (value) => JSON.parse(value.toString('utf8')) as NoteInput,
    encodeLinkedNote: async (note) => ({ value: Buffer.from(JSON.stringify(note)), headers: {} }),
    encodeDeadLetter: async (info) => ({ value: Buffer.from(JSON.stringify({ code: info.errorCode })), headers: {} }),
    encodeReviewMention: async () => ({ value: Buffer.alloc(reviewBytes, 0x61), headers: {} }),
    encodeLabelRequest: async (p) => ({ value: Buffer.from(JSON.stringify({ noteId: p.noteId })), headers: {} }),
  };
}

/** The stage started on `broker` as far as its start path goes before consuming (a stop asked there), then one note handled as a fetched batch. */
async function startAndHandleOneNote(broker: ReturnType<typeof fakeBroker>, reviewBytes: number, overrides: Record<string, unknown> = {}) {
  const stage = new LinkingStage({ config: configWith(overrides), linker, codec: codecWithReviewOf(reviewBytes), logger });
  const internals = stage as unknown as { kafka: KafkaClient; consumer: KafkaConsumerClient; metrics: StageMetrics; handle: (batch: PartitionBatch) => Promise<void> };
  internals.kafka = broker.kafka;
  const committed: string[] = [];
  Object.assign(internals.consumer, { onJoin() {}, onCrash() {}, async commit(commits: { offset: string }[]) { committed.push(...commits.map((c) => c.offset)); } });
  const stop = new AbortController();
  stop.abort();
  await assert.rejects(stage.start(stop.signal), { name: 'AbortError' });
  const note: NoteInput = { noteId: 'n-0', text: 'fever', mentions: [{ id: 'm0', start: 0, end: 5, text: 'fever', label: 'Phenotype' }] };
  const message: InboundRecord = { topic: 'in', partition: 0, offset: '0', timestamp: '1', key: Buffer.from('n-0'), value: Buffer.from(JSON.stringify(note)), headers: {} };
  await internals.handle({ topic: 'in', partition: 0, messages: [message], membership: { groupId: 'g', memberId: 'm', generationId: 1 }, highWatermark: undefined, isStale: () => false });
  const reviewRecords = broker.sent.filter((r) => r.topic === REVIEW).flatMap((r) => r.messages);
  return { stage, committed, reviewRecords, dropped: internals.metrics.counts.sideRecordsDropped };
}

const allTopics = (review: number) => new Map([['cuilink.notes', KAFKA_DEFAULT_MAX_MESSAGE_BYTES], ['cuilink.linked', 2_097_152], ['cuilink.dead-letter', 1_114_124], [REVIEW, review], [MEASURE, 524_288]]);

test('a review topic larger than 1 MiB takes a review record above 1 MiB: its limit is read at start', async () => {
  const broker = fakeBroker(allTopics(2_097_152));
  const { stage, committed, reviewRecords, dropped } = await startAndHandleOneNote(broker, 1_200_000);
  assert.equal(stage.sizes.maxMessageBytes(REVIEW), 2_097_152);
  assert.equal(stage.sizes.maxMessageBytes(MEASURE), 524_288);
  assert.equal(reviewRecords.length, 1, `dropped: ${JSON.stringify(dropped)}`);
  assert.deepEqual(dropped, {});
  assert.equal(broker.refused(), 0);
  assert.deepEqual(committed, ['1']);
});

test('a review topic smaller than 1 MiB: a review record over it is left out without a refused produce', async () => {
  const broker = fakeBroker(allTopics(524_288));
  const { committed, reviewRecords, dropped } = await startAndHandleOneNote(broker, 600_000);
  assert.equal(broker.refused(), 0, 'the record was fitted to the topic’s own limit, not to Kafka’s default');
  assert.equal(reviewRecords.length, 0);
  assert.deepEqual(dropped, { 'review/too_large': 1 });
  assert.deepEqual(committed, ['1']);
});

test('topics.maxMessageBytes sets the output and dead-letter topics’ limits only: the review and label topics are still described', async () => {
  const broker = fakeBroker(allTopics(2_097_152));
  const { stage, reviewRecords } = await startAndHandleOneNote(broker, 1_200_000, { 'topics.maxMessageBytes': 3_000_000 });
  assert.deepEqual(broker.described, [[REVIEW, MEASURE]]);
  assert.equal(stage.sizes.maxMessageBytes('cuilink.linked'), 3_000_000);
  assert.equal(stage.sizes.maxMessageBytes('cuilink.dead-letter'), 3_000_000);
  assert.equal(stage.sizes.maxMessageBytes(REVIEW), 2_097_152);
  assert.equal(reviewRecords.length, 1);
});

test('describeConfigs refused: every topic not set by topics.maxMessageBytes gets Kafka’s default, and the stage starts', async () => {
  const broker = fakeBroker(allTopics(2_097_152), { describeRefused: true });
  const sizes = new TopicSizeLimits();
  await sizes.load(broker.kafka, ['cuilink.linked', 'cuilink.dead-letter'], 3_000_000, logger, [REVIEW, MEASURE]);
  assert.equal(sizes.maxMessageBytes('cuilink.linked'), 3_000_000);
  assert.equal(sizes.maxMessageBytes(REVIEW), KAFKA_DEFAULT_MAX_MESSAGE_BYTES);
  assert.equal(sizes.maxMessageBytes(MEASURE), KAFKA_DEFAULT_MAX_MESSAGE_BYTES);
  const { reviewRecords, dropped } = await startAndHandleOneNote(broker, 1_200_000);
  assert.equal(reviewRecords.length, 0);
  assert.deepEqual(dropped, { 'review/too_large': 1 });
});

test('without review or label topics only the output and dead-letter topics are described', async () => {
  const broker = fakeBroker(allTopics(2_097_152));
  const stage = new LinkingStage({ config: loadStageConfig({ env: {}, overrides: { brokers: ['127.0.0.1:1'] } }), linker, codec: codecWithReviewOf(1), logger });
  Object.assign(stage as unknown as { kafka: KafkaClient }, { kafka: broker.kafka });
  Object.assign((stage as unknown as { consumer: KafkaConsumerClient }).consumer, { onJoin() {}, onCrash() {} });
  const stop = new AbortController();
  stop.abort();
  await assert.rejects(stage.start(stop.signal), { name: 'AbortError' });
  assert.deepEqual(broker.described, [['cuilink.linked', 'cuilink.dead-letter']]);
});
