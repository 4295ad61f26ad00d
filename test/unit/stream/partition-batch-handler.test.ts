import { test } from 'node:test';
import assert from 'node:assert/strict';
import { trace, type SpanContext } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { DeadLetterBreaker } from '../../../src/stream/dead-letter-breaker.ts';
import type { LinkedNote, LinkingCore, NoteInput } from '../../../src/link/types.ts';
import type { InboundRecord, InputCommit, KafkaConsumerClient, KafkaProducerClient, PartitionBatch, TopicRecords } from '../../../src/stream/kafka/client-types.ts';
import { MentionBatcher, type MentionBatcherOptions } from '../../../src/stream/mention-batcher.ts';
import { LabelSelector } from '../../../src/stream/label-selection/label-selector.ts';
import { NoteBatchLinker, type NoteOutcome, type QueuedNote } from '../../../src/stream/note-batch-linker.ts';
import { OutputDelivery } from '../../../src/stream/output-delivery.ts';
import { OutputFitter } from '../../../src/stream/output-fitter.ts';
import { PartitionBatchHandler, type LabelRouting } from '../../../src/stream/partition-batch-handler.ts';
import { loadStageConfig } from '../../../src/stream/stage-config.ts';
import type { StageCodec } from '../../../src/stream/stage-codec.ts';
import { StageProgress } from '../../../src/stream/stage-progress.ts';
import { TopicSizeLimits } from '../../../src/stream/topic-size-limits.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { StageMetrics } from '../../../src/telemetry/stage-metrics.ts';
import { normalizeName } from '../../../src/text/normalize.ts';
import { startTelemetry } from '../../../src/telemetry/telemetry.ts';

// Issue #27 item 4 (fixed in fbcf5a7): stream bugs in PartitionBatchHandler, each shown here with
// fakes of the Kafka client interface (src/stream/kafka/client-types.ts) and a JSON codec.

const config = loadStageConfig({ env: {} });
const { output: OUTPUT, deadLetter: DEAD } = config.topics;
const retry = { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 };
const membership = { groupId: 'g', memberId: 'm', generationId: 1 };

/** NoteEvent as JSON in, LinkedNote / DeadLetter as JSON out: nothing here is about the wire format. */
const codec: StageCodec = {
  decodeNote: async (value) => JSON.parse(value.toString('utf8')) as NoteInput,
  encodeLinkedNote: async (note) => ({ value: Buffer.from(JSON.stringify(note)), headers: {} }),
  encodeDeadLetter: async (info) => ({ value: Buffer.from(JSON.stringify({ code: info.errorCode, offset: info.sourceOffset })), headers: {} }),
  encodeReviewMention: async (note, mention) => ({ value: Buffer.from(JSON.stringify({ noteId: note.noteId, mentionId: mention.mentionId })), headers: {} }),
  encodeLabelRequest: async (p) => ({ value: Buffer.from(JSON.stringify({ noteId: p.noteId })), headers: {} }),
};

function note(i: number, mentions = 1): NoteInput {
  const text = Array.from({ length: mentions }, () => 'fever').join(' ');
  return { noteId: `n-${i}`, text, mentions: Array.from({ length: mentions }, (_, j) => ({ id: `m${j}`, start: j * 6, end: j * 6 + 5, text: 'fever', label: 'Phenotype' })) };
}

function batchOf(notes: NoteInput[]): PartitionBatch {
  const messages: InboundRecord[] = notes.map((n, i) => ({ topic: 'in', partition: 0, offset: String(i), timestamp: String(Date.now()), key: Buffer.from(n.noteId), value: Buffer.from(JSON.stringify(n)), headers: {} }));
  return { topic: 'in', partition: 0, messages, membership, highWatermark: undefined, isStale: () => false };
}

const batchContext: SpanContext = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };

function linked(n: NoteInput): LinkedNote {
  return { noteId: n.noteId, mentions: [], linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 1 };
}

/** Links every note (no model): what is under test is the handler around it. */
function batcherOf(options: Partial<MentionBatcherOptions> = {}, delayMs = 0): MentionBatcher<QueuedNote, NoteOutcome> {
  return new MentionBatcher<QueuedNote, NoteOutcome>(
    { maxMentions: 128, maxWaitMs: 0, maxInFlightMentions: 1024, ...options },
    (q) => q.mentionCount,
    async (items) => {
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return items.map((q): NoteOutcome => ({ kind: 'linked', linked: linked(q.note), batchContext }));
    },
  );
}

interface FakeProducer extends KafkaProducerClient {
  sent: TopicRecords[];
  sends: number;
}

/** `fail(n)`: what the n-th send throws (undefined: it succeeds). */
function fakeProducer(fail: (call: number) => unknown = () => undefined): FakeProducer {
  const producer: FakeProducer = {
    sent: [],
    sends: 0,
    async connect() {},
    async send(requests) {
      const error = fail(++producer.sends);
      if (error !== undefined) throw error;
      producer.sent.push(...requests);
    },
    transaction() {
      throw new Error('not transactional');
    },
    async close() {},
  };
  return producer;
}

interface FakeConsumer extends KafkaConsumerClient {
  commits: InputCommit[][];
  committed: InputCommit[];
}

/** `fail(n)`: what the n-th commit throws (undefined: it succeeds). */
function fakeConsumer(fail: (call: number) => unknown = () => undefined): FakeConsumer {
  const consumer: FakeConsumer = {
    commits: [],
    committed: [],
    async run() {},
    async commit(commits) {
      consumer.commits.push(commits);
      const error = fail(consumer.commits.length);
      if (error !== undefined) throw error;
      consumer.committed.push(...commits);
    },
    pause() {},
    resume() {},
    lastBrokerContactAt: () => Date.now(),
    onJoin() {},
    onCrash() {},
    async stop() {},
    async close() {},
  };
  return consumer;
}

const brokerDown = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9092'), { retriable: true });

async function setUp(options: { producer?: FakeProducer; consumer?: FakeConsumer; batcher?: MentionBatcher<QueuedNote, NoteOutcome>; metrics?: StageMetrics; labels?: LabelRouting; breaker?: DeadLetterBreaker } = {}) {
  const producer = options.producer ?? fakeProducer();
  const consumer = options.consumer ?? fakeConsumer();
  const batcher = options.batcher ?? batcherOf();
  const sizes = new TopicSizeLimits();
  const logger = createLogger({ level: 'error' });
  await sizes.load(undefined as never, [OUTPUT, DEAD], 1_000_000, logger);
  // The handler's retry also retries the commit alone (fixed code): both retry quickly here.
  const delivery = new OutputDelivery(() => producer, consumer, config, sizes, retry);
  const progress = new StageProgress();
  const metrics = options.metrics ?? new StageMetrics(() => batcher.inFlightMentions);
  const handler = new PartitionBatchHandler({
    config, codec, batcher, delivery, sizes, fitter: new OutputFitter(codec, sizes),
    metrics, tracer: trace.getTracer('test'), logger, retry, progress, isStopping: () => false, labels: options.labels, breaker: options.breaker,
  });
  return { handler, producer, consumer, progress, batcher, metrics };
}

const notesOut = (producer: FakeProducer) => producer.sent.filter((r) => r.topic === OUTPUT).flatMap((r) => r.messages.map((m) => JSON.parse(String(m.value)) as LinkedNote).map((n) => n.noteId));
const deadOut = (producer: FakeProducer) => producer.sent.filter((r) => r.topic === DEAD).flatMap((r) => r.messages);

test('a delivery whose retries run out hands the batch back and leaves /readyz free: progress is not held by the abandoned key', async () => {
  const { handler, producer, progress } = await setUp({ producer: fakeProducer(() => brokerDown()) });
  await assert.rejects(handler.handle(batchOf([note(1), note(2)])), /ECONNREFUSED/);
  assert.equal(producer.sends, retry.maxAttempts, 'the delivery was retried until its attempts ran out');
  assert.deepEqual(progress.stalled, [], 'no stalled key left behind');
  assert.equal(progress.progressing, true, 'the records were handed back to Kafka (maybe to another instance): this stage is not stuck');
});

test('while a delivery is being retried its key does hold progress, and a success frees it', async () => {
  const seen: boolean[] = [];
  const ref: { progress?: StageProgress } = {};
  const producer = fakeProducer((call) => {
    seen.push(ref.progress!.progressing);
    return call === 1 ? brokerDown() : undefined;
  });
  const { handler, progress } = await setUp({ producer });
  ref.progress = progress;
  await handler.handle(batchOf([note(1)]));
  assert.deepEqual(seen, [true, false], 'stalled during the retry');
  assert.equal(progress.progressing, true);
});

test('an at-least-once commit that fails is retried alone: the records are produced once, the commit succeeds on the third try', async () => {
  const { handler, producer, consumer, progress } = await setUp({ consumer: fakeConsumer((call) => (call <= 2 ? brokerDown() : undefined)) });
  await handler.handle(batchOf([note(1), note(2), note(3)]));
  assert.equal(producer.sends, 1, 'one produce request, not one per commit attempt');
  assert.deepEqual(notesOut(producer), ['n-1', 'n-2', 'n-3'], 'each note produced exactly once');
  assert.equal(consumer.commits.length, 3);
  assert.deepEqual(consumer.committed.map((c) => c.offset), ['3']);
  assert.equal(progress.progressing, true);
});

test('an at-least-once commit that keeps failing: COMMIT_FAILED (not retriable), and the handler’s retry does not produce the records again', async () => {
  const { handler, producer, consumer } = await setUp({ consumer: fakeConsumer(() => brokerDown()) });
  await assert.rejects(handler.handle(batchOf([note(1), note(2)])), (error: unknown) => {
    assert.ok(error instanceof CuilinkError, `a CuilinkError, got ${String(error)}`);
    assert.equal(error.code, 'COMMIT_FAILED');
    assert.equal(error.retriable, false);
    return true;
  });
  assert.equal(producer.sends, 1, 'the records were produced once, however often the commit was tried');
  assert.deepEqual(notesOut(producer), ['n-1', 'n-2']);
  assert.equal(consumer.commits.length, retry.maxAttempts, 'the commit alone was retried');
  assert.equal(consumer.committed.length, 0);
});

test('BATCHER_FULL on submit is waited out: a batch larger than the batcher’s queue completes, every note linked, none dead-lettered', async () => {
  // Each note weighs 3 mentions; the queue holds at most 4, so a second note submitted while the
  // first is still queued or linking is refused with BATCHER_FULL.
  const batcher = batcherOf({ maxMentions: 3, maxInFlightMentions: 100, maxQueuedMentions: 4 }, 5);
  const notes = Array.from({ length: 8 }, (_, i) => note(i, 3));
  const rejected = () => batcher.stats.rejected;
  const { handler, producer, consumer, progress } = await setUp({ batcher });
  await handler.handle(batchOf(notes));
  assert.ok(rejected() > 0, 'the test did reach a full batcher queue');
  assert.deepEqual(notesOut(producer).sort(), notes.map((n) => n.noteId).sort(), 'every note linked and produced');
  assert.equal(deadOut(producer).length, 0, 'none failed or dead-lettered');
  assert.equal(consumer.committed.at(-1)?.offset, String(notes.length), 'the whole batch committed');
  assert.equal(progress.progressing, true);
});

test('a record that cannot be decoded for an internal reason hands the batch back only after the records before it are delivered: nothing is produced or committed afterwards', async () => {
  const registryDown: StageCodec = {
    ...codec,
    decodeNote: async (value) => {
      if (String(value) === 'REGISTRY') throw new CuilinkError('SCHEMA_REGISTRY_UNAVAILABLE', 'registry down', { retriable: true });
      return codec.decodeNote(value, {});
    },
  };
  const producer = fakeProducer();
  const consumer = fakeConsumer();
  const batcher = batcherOf({}, 50); // linking outlasts the decode retries
  const sizes = new TopicSizeLimits();
  const logger = createLogger({ level: 'error' });
  await sizes.load(undefined as never, [OUTPUT, DEAD], 1_000_000, logger);
  const handler = new PartitionBatchHandler({
    config, codec: registryDown, batcher, delivery: new OutputDelivery(() => producer, consumer, config, sizes, retry), sizes, fitter: new OutputFitter(registryDown, sizes),
    metrics: new StageMetrics(() => batcher.inFlightMentions), tracer: trace.getTracer('test'), logger, retry, progress: new StageProgress(), isStopping: () => false,
  });
  const batch = batchOf([note(1), note(2), note(3)]);
  batch.messages[2]!.value = Buffer.from('REGISTRY');
  await assert.rejects(handler.handle(batch), (error: unknown) => (error as CuilinkError).code === 'SCHEMA_REGISTRY_UNAVAILABLE');
  const atRejection = { sent: notesOut(producer), committed: consumer.committed.map((c) => c.offset) };
  assert.deepEqual(atRejection, { sent: ['n-1', 'n-2'], committed: ['2'] }, 'the records before the fault are delivered and committed before the batch is handed back');
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.deepEqual({ sent: notesOut(producer), committed: consumer.committed.map((c) => c.offset) }, atRejection, 'nothing produced or committed once handle() has rejected');
  assert.equal(deadOut(producer).length, 0, 'an internal fault is never dead-lettered');
});

test('a linking batch handed back and read again counts once, when it links: batches and mentionsLinked say what was linked', async () => {
  // The stage's own wiring: the batcher links through a NoteBatchLinker that counts into the handler's metrics.
  const metrics = new StageMetrics(() => 0);
  let calls = 0;
  const core: LinkingCore = {
    versions: { linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i' },
    async linkNotes(notes) {
      // Every attempt of the first read fails (a worker being restarted); the second read links.
      if (++calls <= retry.maxAttempts) throw new CuilinkError('ENCODER_RESTARTING', 'worker died; restarting it', { retriable: true });
      return notes.map(linked);
    },
    async close() {},
  };
  const noteLinker = new NoteBatchLinker(core, trace.getTracer('test'), metrics, retry, createLogger({ level: 'error', sink: () => {} }));
  const batcher = new MentionBatcher<QueuedNote, NoteOutcome>({ maxMentions: 128, maxWaitMs: 0, maxInFlightMentions: 1024 }, (q) => q.mentionCount, (items) => noteLinker.link(items));
  const { handler, producer, consumer } = await setUp({ batcher, metrics });
  const batch = batchOf([note(1, 2), note(2, 3)]);
  await assert.rejects(handler.handle(batch), (error: unknown) => (error as CuilinkError).code === 'ENCODER_RESTARTING');
  assert.deepEqual({ batches: metrics.counts.batches, mentionsLinked: metrics.counts.mentionsLinked }, { batches: 0, mentionsLinked: 0 }, 'nothing linked yet');
  await handler.handle(batch);
  assert.deepEqual(notesOut(producer), ['n-1', 'n-2']);
  assert.deepEqual(consumer.committed.map((c) => c.offset), ['2']);
  assert.deepEqual({ batches: metrics.counts.batches, mentionsLinked: metrics.counts.mentionsLinked }, { batches: 1, mentionsLinked: 5 }, 'one batch of 5 mentions linked, whatever the failed reads before it');
});

test('measure requests with no measure topic are not counted as proposed: proposedMeasure counts what was sent, the unsent are counted apart', async () => {
  // Links each note's mentions, so the selector has something to ask; every note is in the measure slice.
  const batcher = new MentionBatcher<QueuedNote, NoteOutcome>({ maxMentions: 128, maxWaitMs: 0, maxInFlightMentions: 1024 }, (q) => q.mentionCount, async (items) =>
    items.map((q): NoteOutcome => ({
      kind: 'linked',
      linked: { ...linked(q.note), mentions: q.note.mentions.map((m) => ({ mentionId: m.id, start: m.start, end: m.end, label: m.label, conceptId: 'HP:0001945', conceptName: 'Fever', semanticTypes: [], score: 0.9, confidence: 0.9, via: 'exact', nil: false, reranked: false, candidates: [] })) },
      batchContext,
    })),
  );
  const selectorOf = () => new LabelSelector({ policy: 'confidence', budget: 1, windowMs: 3_600_000, recurrenceExponent: 2, measureFraction: 1, measureBudget: 100, surfaceKey: normalizeName });
  const notes = [note(1, 2), note(2, 1)];

  const unsent = selectorOf();
  const first = await setUp({ batcher, labels: { selector: unsent, learnTopic: 'asks' } });
  await first.handler.handle(batchOf(notes));
  assert.equal(first.producer.sent.filter((r) => r.topic === 'asks').length, 0, 'nothing asked: no measure topic, and measure notes are never learned');
  assert.deepEqual(first.metrics.counts.labelRequests, {});
  assert.equal(unsent.stats.proposedMeasure, 0, 'nothing was proposed to anyone');
  assert.equal(unsent.stats.notSent, 3, 'the three measure requests without a topic, counted as such');

  const sent = selectorOf();
  const second = await setUp({ batcher, labels: { selector: sent, learnTopic: 'asks', measureTopic: 'measure' } });
  await second.handler.handle(batchOf(notes));
  assert.equal(second.producer.sent.filter((r) => r.topic === 'measure').flatMap((r) => r.messages).length, 3);
  assert.deepEqual([sent.stats.proposedMeasure, sent.stats.notSent, second.metrics.counts.labelRequests.measure], [3, 0, 3]);
});

test('a dead-lettered record keeps its producer’s trace: the span that produces its dead letter links the record’s traceparent', async () => {
  const spans = new InMemorySpanExporter();
  const telemetry = await startTelemetry({ serviceName: 'test', prometheus: false, spanProcessors: [new SimpleSpanProcessor(spans)] });
  try {
    const { handler, producer } = await setUp();
    const batch = batchOf([note(1), { ...note(2), text: '', mentions: [] }]);
    const producerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    batch.messages[1]!.headers = { traceparent: Buffer.from(`00-${producerTrace}-00f067aa0ba902b7-01`) };
    await handler.handle(batch);
    assert.equal(deadOut(producer).length, 1, 'the empty note is dead-lettered');
    const produce = spans.getFinishedSpans().find((s) => s.name === 'cuilink.stream.produce')!;
    assert.ok(produce.links.some((l) => l.context.traceId === producerTrace), 'linked to the dead-lettered record’s own trace');
  } finally {
    await telemetry.shutdown();
  }
});

test('a batch handed back and read again counts its records in the dead-letter breaker once: a share under maxShare does not open it', async () => {
  // Opens only on more than 3 dead letters in the last 10 records; the batch holds 2 (of 4).
  const breaker = new DeadLetterBreaker({ windowRecords: 10, maxShare: 0.3 });
  let outage = true;
  const { handler, producer, consumer } = await setUp({ breaker, producer: fakeProducer(() => (outage ? brokerDown() : undefined)) });
  const empty = (i: number): NoteInput => ({ ...note(i), text: '', mentions: [] });
  const batch = batchOf([note(1), empty(2), note(3), empty(4)]);
  await assert.rejects(handler.handle(batch), /ECONNREFUSED/);
  await assert.rejects(handler.handle(batch), /ECONNREFUSED/);
  outage = false;
  await handler.handle(batch);
  assert.deepEqual(breaker.state, { open: false, records: 4, dead: 2, share: 0.5 }, 'four records, two dead: each counted once however often it was read');
  assert.equal(deadOut(producer).length, 2);
  assert.deepEqual(consumer.committed.map((c) => c.offset), ['4']);
});
