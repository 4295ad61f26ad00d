import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaClient } from '../../src/stream/kafka/client-types.ts';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { stageConfigSchema, type StageConfig } from '../../src/stream/stage-config.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { avroToLinkedNote, createRecordCodec, knownSchemas, SCHEMA_FINGERPRINT_HEADER, SINGLE_OBJECT_HEADER_BYTES, type RecordCodec } from '../../src/stream/avro/index.ts';
import { startStageRuntime, type StageRuntime } from '../../src/cli/stage-runtime.ts';
import { buildPhenotypeIndex, noteMessage, PHENOTYPE_KB, publish, readTopics, syntheticNotes, waitFor, type ReadRecord } from '../support/stream-fixtures.ts';

// One broker, one stage (real default bi-encoder over a small real phenotype index) for the file.
const MARKER = 'ZQXMARKER7731';
let broker: LocalBroker;
let root: string;
let kafka: KafkaClient;
let runtime: StageRuntime;
let config: StageConfig;
const codec: RecordCodec = createRecordCodec();
const spans = new InMemorySpanExporter();
const logs: string[] = [];

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-stream-'));
  broker = await startLocalBroker();
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'stream-stage-test', logLevel: 'nothing' });
  config = stageConfigSchema.parse({
    brokers: broker.brokers,
    groupId: 'stage-test',
    topics: { input: 'notes', output: 'linked', deadLetter: 'dead' },
    batching: { maxMentions: 16, maxWaitMs: 5, maxInFlightMentions: 64 },
    limits: { maxNoteChars: 2000, maxMentionsPerNote: 10 },
    http: { host: '127.0.0.1', port: 0 },
    telemetry: { logLevel: 'debug', kafkaLogLevel: 'info' },
    linker: { indexDir: await buildPhenotypeIndex(join(root, 'index')), threads: 1 },
  });
  await ensureTopics(kafka, ['notes', 'linked'], { partitions: 2 });
  await ensureTopics(kafka, ['dead'], { partitions: 1 });
  runtime = await startStageRuntime(config, { spanProcessors: [new SimpleSpanProcessor(spans)], logSink: (line) => logs.push(line) });
  await runtime.stage.whenJoined();
});

after(async () => {
  await runtime?.close();
  await broker?.stop();
  rmSync(root, { recursive: true, force: true });
});

const byPrefix = (records: ReadRecord[] | undefined, prefix: string) => (records ?? []).filter((r) => r.key?.startsWith(prefix));
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

test('links every note to the output topic keyed by note id, in per-partition order, with trace context carried through', async () => {
  const notes = syntheticNotes(12, 'happy', MARKER);
  const messages = await Promise.all(notes.map((n, i) => noteMessage(codec, n, { traceparent: `00-${TRACE_ID}-${(i + 1).toString(16).padStart(16, '0')}-01` })));
  await publish(kafka, 'notes', messages);
  const read = await readTopics(kafka, ['linked'], (r) => byPrefix(r.get('linked'), 'happy').length >= 12);
  const output = byPrefix(read.get('linked'), 'happy');
  assert.deepEqual(output.map((r) => r.key).sort(), notes.map((n) => n.noteId).sort(), 'each note once');

  const names = new Map<string, string>();
  for (const line of readFileSync(PHENOTYPE_KB, 'utf8').trim().split('\n')) {
    const c = JSON.parse(line) as { id: string; name: string; synonyms: string[] };
    for (const name of [c.name, ...c.synonyms]) names.set(name.toLowerCase(), c.id);
  }
  for (const record of output) {
    const linked = avroToLinkedNote(await codec.decode('LinkedNote', record.value, record.headers as never));
    const input = notes.find((n) => n.noteId === linked.noteId)!;
    assert.deepEqual(linked.mentions.map((m) => m.mentionId), input.mentions.map((m) => m.id));
    for (const mention of linked.mentions) {
      const text = input.mentions.find((m) => m.id === mention.mentionId)!.text;
      const exact = names.get(text.toLowerCase());
      if (exact) assert.equal(mention.conceptId, exact, `'${text}' is a KB name: linked to its concept`);
      assert.ok(mention.candidates.length > 0);
    }
    assert.equal(linked.indexVersion, runtime.linker.versions.indexVersion);
  }

  // Per input partition, outputs appear in input offset order within each output partition.
  for (const partition of [0, 1]) {
    const sources = output.filter((r) => r.partition === partition).map((r) => String(r.headers['cuilink-source']).split('/'));
    for (const inputPartition of ['0', '1']) {
      const offsets = sources.filter((s) => s[1] === inputPartition).map((s) => Number(s[2]));
      assert.deepEqual(offsets, [...offsets].sort((a, b) => a - b), `output partition ${partition}, input partition ${inputPartition}`);
    }
  }

  const finished = spans.getFinishedSpans();
  const batchSpans = finished.filter((s) => s.name === 'cuilink.stream.batch');
  const linkedTraceIds = new Set(batchSpans.flatMap((s) => s.links.map((l) => l.context.traceId)));
  assert.ok(linkedTraceIds.has(TRACE_ID), 'batch spans link to the input records’ trace context');
  const batchIds = new Set(batchSpans.map((s) => s.spanContext().spanId));
  const linkSpans = finished.filter((s) => s.name === 'cuilink.link');
  assert.ok(linkSpans.length > 0 && linkSpans.every((s) => batchIds.has(parentOf(s)!)), 'the linker’s spans are children of the batch span');
  const encodeSpans = finished.filter((s) => s.name === 'cuilink.encode' || s.name === 'cuilink.retrieve');
  assert.ok(encodeSpans.length > 0, 'encode/retrieve spans recorded');
  const produceSpans = finished.filter((s) => s.name === 'cuilink.stream.produce');
  for (const record of output) {
    const [, traceId, spanId] = String(record.headers.traceparent).split('-');
    const produce = produceSpans.find((s) => s.spanContext().spanId === spanId);
    assert.ok(produce, 'output traceparent names a produce span');
    assert.equal(produce.spanContext().traceId, traceId);
    assert.ok(batchIds.has(parentOf(produce)!), 'the produce span is a child of a batch span');
  }
});

function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

test('bad input goes to the dead-letter topic with its original bytes, headers and reason; in = out + dead-lettered', async () => {
  const good = syntheticNotes(4, 'dlq-good');
  const [base] = syntheticNotes(1, 'x');
  const bad: { key: string; code: string; message: () => Promise<{ value: Buffer | null; headers: Record<string, string> }> }[] = [
    { key: 'dlq-garbage', code: 'UNDECODABLE', message: async () => ({ value: Buffer.from([0xff, 0xfe, 0x00, 0x13, 0x37]), headers: { [SCHEMA_FINGERPRINT_HEADER]: knownSchemas().current('NoteEvent').fingerprint } }) },
    { key: 'dlq-unknown-schema', code: 'UNKNOWN_SCHEMA', message: async () => ({ ...(await encoded({ ...base!, noteId: 'dlq-unknown-schema' })), headers: { [SCHEMA_FINGERPRINT_HEADER]: 'f'.repeat(64) } }) },
    // The plain Avro body alone (no single-object header C3 01 + fingerprint) and no fingerprint header: nothing names the writer schema.
    { key: 'dlq-no-header', code: 'UNKNOWN_SCHEMA', message: async () => ({ value: (await encoded({ ...base!, noteId: 'dlq-no-header' })).value.subarray(SINGLE_OBJECT_HEADER_BYTES), headers: {} }) },
    { key: 'dlq-tombstone', code: 'EMPTY_RECORD', message: async () => ({ value: null, headers: {} }) },
    { key: 'dlq-span-outside', code: 'BAD_SPAN', message: () => encoded({ ...base!, noteId: 'dlq-span-outside', mentions: [{ ...base!.mentions[0]!, start: 5, end: 5000 }] }) },
    { key: 'dlq-span-text', code: 'SPAN_TEXT_MISMATCH', message: () => encoded({ ...base!, noteId: 'dlq-span-text', mentions: [{ ...base!.mentions[0]!, text: `${MARKER}` }] }) },
    { key: 'dlq-empty', code: 'EMPTY_NOTE', message: () => encoded({ ...base!, noteId: 'dlq-empty', text: '', mentions: [] }) },
    { key: 'dlq-oversized', code: 'NOTE_TOO_LARGE', message: () => encoded({ ...base!, noteId: 'dlq-oversized', text: `${MARKER} `.repeat(300), mentions: [] }) },
    { key: 'dlq-too-many-mentions', code: 'NOTE_TOO_LARGE', message: () => encoded({ ...base!, noteId: 'dlq-too-many-mentions', mentions: Array.from({ length: 11 }, (_, i) => ({ ...base!.mentions[0]!, id: `m${i}` })) }) },
  ];
  async function encoded(note: typeof base & object) {
    const m = await noteMessage(codec, note);
    return { value: m.value as Buffer, headers: m.headers as Record<string, string> };
  }
  const sentBad = await Promise.all(bad.map(async (b) => ({ ...b, sent: await b.message() })));
  // Bad records interleaved with good ones: a bad record never holds up the notes after it.
  const messages = [];
  for (const [i, b] of sentBad.entries()) {
    messages.push({ key: b.key, value: b.sent.value, headers: { ...b.sent.headers, 'x-origin': 'dlq-test' } });
    if (i < good.length) messages.push(await noteMessage(codec, good[i]!));
  }
  await publish(kafka, 'notes', messages);
  const read = await readTopics(kafka, ['linked', 'dead'], (r) => byPrefix(r.get('linked'), 'dlq-good').length >= good.length && byPrefix(r.get('dead'), 'dlq-').length >= bad.length);
  const output = byPrefix(read.get('linked'), 'dlq-');
  const dead = byPrefix(read.get('dead'), 'dlq-');
  assert.equal(messages.length, output.length + dead.length, 'in = out + dead-lettered');
  assert.deepEqual(output.map((r) => r.key).sort(), good.map((n) => n.noteId).sort());
  for (const b of sentBad) {
    const record = dead.find((r) => r.key === b.key);
    assert.ok(record, `${b.key} dead-lettered`);
    assert.equal(String(record.headers['cuilink-error-code']), b.code, b.key);
    const letter = await codec.decode('DeadLetter', record.value, record.headers as never);
    assert.equal(letter.errorCode, b.code);
    assert.ok(letter.reason.length > 0 && !letter.reason.includes(MARKER), 'a reason, without note text');
    assert.equal(letter.sourceTopic, 'notes');
    assert.ok(letter.offset >= 0 && (letter.partition === 0 || letter.partition === 1), `${b.key}: offset ${letter.offset}, partition ${letter.partition}`);
    assert.deepEqual(letter.original === null ? null : Buffer.from(letter.original), b.sent.value, 'the original bytes');
    assert.equal(letter.originalHeaders.find((h) => h.key === 'x-origin')?.value?.toString(), 'dlq-test', 'the original headers');
    assert.ok(['decode', 'validate'].includes(letter.stage), `${b.key}: stage ${letter.stage}`);
  }
  // The counters move once the broker has acked a dead letter, which a reader of the topic can see first.
  const counted = () => runtime.stage.stats().counts.deadLetteredByCode;
  await waitFor(() => counted().UNKNOWN_SCHEMA! >= 2 && counted().NOTE_TOO_LARGE! >= 2, 10_000, `dead letters counted by code (${JSON.stringify(counted())})`);
});

test('no note or mention text in spans, logs or metrics; /healthz, /readyz and /metrics answer', async () => {
  const health = runtime.health!;
  assert.equal((await fetch(`${health.url}/healthz`)).status, 200);
  assert.equal((await fetch(`${health.url}/readyz`)).status, 200);
  const metricsText = await (await fetch(`${health.url}/metrics`)).text();
  assert.match(metricsText, /cuilink_stream_consumed_total/);
  assert.match(metricsText, /cuilink_stream_dead_lettered_total\{[^}]*code="UNKNOWN_SCHEMA"/);
  assert.match(metricsText, /cuilink_stream_in_flight_mentions/);
  assert.match(metricsText, /cuilink_stream_end_to_end_lag_seconds_bucket/);
  assert.match(metricsText, /cuilink_stream_phase_duration_seconds_bucket\{[^}]*phase="link"/);
  // Series that had no event yet exist at 0, so increase() alerts see their first event.
  assert.match(metricsText, /cuilink_stream_dead_lettered_total\{[^}]*code="OUTPUT_TOO_LARGE"[^}]*\} 0/);
  assert.match(metricsText, /cuilink_stream_retries_total\{[^}]*operation="deliver"[^}]*\} 0/);
  assert.match(metricsText, /cuilink_stream_consumer_lag\{[^}]*partition="[01]"[^}]*topic="notes"|cuilink_stream_consumer_lag\{[^}]*topic="notes"[^}]*partition="[01]"/);
  const finished = spans.getFinishedSpans();
  assert.ok(finished.length > 0);
  assert.ok(logs.length > 0);
  const spanDump = JSON.stringify(finished.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, links: s.links, status: s.status })));
  // The marker was in every happy-path note's text and in a mention, in a mismatched span text and an oversized note.
  assert.equal(spanDump.includes(MARKER), false, 'spans carry no note text');
  assert.equal(logs.join('\n').includes(MARKER), false, 'logs carry no note text');
  assert.equal(metricsText.includes(MARKER), false, 'metrics carry no note text');
  assert.equal(logs.join('\n').includes('seen for'), false, 'logs carry no note text (template words)');
});
