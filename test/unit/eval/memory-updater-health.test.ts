import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryUpdater } from '../../../src/eval/memory-updater.ts';
import type { BiEncoder } from '../../../src/encode/bi-encoder.ts';
import { MemoryLearner } from '../../../src/link/memory-learner.ts';
import { startMemoryUpdaterHttp } from '../../../src/cli/memory-updater-http.ts';
import type { ConsumerJoin, ConsumerRunOptions, KafkaClient, KafkaConsumerClient } from '../../../src/stream/kafka/client-types.ts';
import type { RecordCodec } from '../../../src/stream/avro/record-codec.ts';
import type { GoldMentionRecord, NoteEventRecord } from '../../../src/stream/avro/avro-records.ts';
import { TrigramEncoder } from '../../support/trigram-encoder.ts';

const trigram = new TrigramEncoder();
const encoder = { modelId: trigram.modelId, modelSha256: 'e'.repeat(64), dims: trigram.dims, batchIndependent: true, manifest: { query: { mode: 'mention' } }, encode: (texts: string[]) => trigram.encode(texts) } as unknown as BiEncoder;

/** A consumer the test drives: it hands records over, joins, and crashes when told. */
function harness(root: string) {
  let run: ConsumerRunOptions | undefined;
  const joins: ((join: ConsumerJoin) => void)[] = [];
  const crashes: ((error: unknown, restarting: boolean) => void)[] = [];
  const consumer: Partial<KafkaConsumerClient> = {
    run: async (options) => {
      run = options;
    },
    close: async () => {},
    onJoin: (listener) => joins.push(listener),
    onCrash: (listener) => crashes.push(listener),
  };
  const kafka = { consumer: () => consumer } as unknown as KafkaClient;
  const codec = { decode: async (_kind: string, value: Buffer) => JSON.parse(value.toString()) } as unknown as RecordCodec;
  const updater = new MemoryUpdater({ kafka, codec, notesTopic: 'notes', goldTopic: 'gold', groupId: 'g', root, learner: new MemoryLearner(encoder), learnFraction: 1, flushMs: 60_000, log: () => {} });
  let offset = 0;
  const send = async (topic: 'notes' | 'gold', value: NoteEventRecord | GoldMentionRecord) => {
    const message = { topic, partition: 0, offset: String(offset++), timestamp: '0', key: null, value: Buffer.from(JSON.stringify(value)), headers: {} };
    await run!.eachBatch({ topic, partition: 0, messages: [message], membership: { groupId: 'g', memberId: 'm', generationId: 1 }, highWatermark: undefined, isStale: () => false });
  };
  return {
    updater,
    send,
    join: () => joins.forEach((l) => l({ memberId: 'm', generationId: 1, assignment: [] })),
    crash: (restarting: boolean) => crashes.forEach((l) => l(new Error('broker gone'), restarting)),
  };
}

const note: NoteEventRecord = { noteId: 'n1', text: 'Pt has DM.', mentions: [{ id: 'm1', start: 7, end: 9, text: 'DM', label: 'Disease', score: null }], source: null, timestamp: 0, nerModelVersion: null };
const gold: GoldMentionRecord = { noteId: 'n1', mentionId: 'm1', ids: ['MESH:D003920'], label: 'Disease', start: 7, end: 9, annotator: null, annotatedAt: 0 };

test('a consumer that gives up for good fails the updater (failed rejects, unhealthy), where it once idled and looked fine', async () => {
  const root = join(mkdtempSync(join(tmpdir(), 'cuilink-updater-health-')), 'memory');
  const { updater, join: joined, crash } = harness(root);
  let failure: unknown;
  updater.failed.catch((error: unknown) => {
    failure = error;
  });
  try {
    await updater.start();
    joined();
    assert.deepEqual([updater.live, updater.ready], [true, true]);
    crash(true);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(failure, undefined, 'a consumer that restarts is not a failure');
    crash(false);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal((failure as { code?: string } | undefined)?.code, 'CONSUMER_FAILED');
    assert.deepEqual([updater.live, updater.ready], [false, false]);
  } finally {
    await updater.stop();
    rmSync(join(root, '..'), { recursive: true, force: true });
  }
});

test('--port serves /healthz, /readyz and /metrics over the updater\'s stats, with no note or mention text', async () => {
  const root = join(mkdtempSync(join(tmpdir(), 'cuilink-updater-health-')), 'memory');
  const { updater, send, join: joined } = harness(root);
  let current: MemoryUpdater | undefined;
  const http = await startMemoryUpdaterHttp({ host: '127.0.0.1', port: 0, updater: () => current, log: () => {} });
  const get = async (path: string) => {
    const res = await fetch(`${http.url}${path}`);
    return { status: res.status, text: await res.text() };
  };
  try {
    assert.equal((await get('/healthz')).status, 503, 'not live while the model loads');
    assert.equal((await get('/readyz')).status, 503);
    current = updater;
    await updater.start();
    assert.equal((await get('/healthz')).status, 200, 'live once the consumer runs');
    assert.equal((await get('/readyz')).status, 503, 'not ready before the group is joined');
    joined();
    assert.equal((await get('/readyz')).status, 200);
    await send('notes', note);
    await send('gold', gold);
    await send('gold', gold);
    const before = (await get('/metrics')).text;
    assert.match(before, /^cuilink_memory_updater_labels_pending(\{[^}]*\})? 1$/m);
    assert.match(before, /^cuilink_memory_updater_duplicates_total(\{[^}]*\})? 1$/m);
    await updater.flush();
    const text = (await get('/metrics')).text;
    for (const [name, value] of [['labels_learned_total', 1], ['snapshots_written_total', 1], ['snapshots_failed_total', 0], ['gold_dropped_total', 0], ['erased_skipped_total', 0], ['labels_pending', 0], ['memory_version_sequence', 1]] as const) {
      assert.match(text, new RegExp(`^cuilink_memory_updater_${name}(\\{[^}]*\\})? ${value}$`, 'm'), name);
    }
    assert.match(text, /^cuilink_memory_updater_last_snapshot_age_seconds(\{[^}]*\})? \d/m);
    assert.doesNotMatch(text, /Pt has|DM|n1|m1|MESH/, 'no note, mention or label text');
  } finally {
    await updater.stop();
    await http.close();
    rmSync(join(root, '..'), { recursive: true, force: true });
  }
});
