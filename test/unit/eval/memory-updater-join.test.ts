import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryUpdater, type MemoryUpdaterOptions } from '../../../src/eval/memory-updater.ts';
import type { BiEncoder } from '../../../src/encode/bi-encoder.ts';
import { MemoryLearner } from '../../../src/link/memory-learner.ts';
import { resolveMemoryDir } from '../../../src/retrieve/memory-root.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { normalizeName } from '../../../src/text/normalize.ts';
import type { ConsumerRunOptions, KafkaClient, KafkaConsumerClient } from '../../../src/stream/kafka/client-types.ts';
import type { RecordCodec } from '../../../src/stream/avro/record-codec.ts';
import type { GoldMentionRecord, NoteEventRecord } from '../../../src/stream/avro/avro-records.ts';
import { TrigramEncoder } from '../../support/trigram-encoder.ts';

const trigram = new TrigramEncoder();
const encoder = { modelId: trigram.modelId, modelSha256: 'e'.repeat(64), dims: trigram.dims, batchIndependent: true, manifest: { query: { mode: 'mention' } }, encode: (texts: string[]) => trigram.encode(texts) } as unknown as BiEncoder;

/** A consumer that hands the test's records to the updater one record per batch; the codec reads JSON. */
function harness(root: string, options: Partial<MemoryUpdaterOptions> = {}) {
  let run: ConsumerRunOptions | undefined;
  const offsets = new Map<string, number>();
  const consumer: Partial<KafkaConsumerClient> = {
    run: async (options) => {
      run = options;
    },
    close: async () => {},
    onJoin: () => {},
    onCrash: () => {},
  };
  const kafka = { consumer: () => consumer } as unknown as KafkaClient;
  const codec = { decode: async (_kind: string, value: Buffer) => JSON.parse(value.toString()) } as unknown as RecordCodec;
  const updater = new MemoryUpdater({ kafka, codec, notesTopic: 'notes', goldTopic: 'gold', groupId: 'g', root, learner: new MemoryLearner(encoder), learnFraction: 1, flushMs: 60_000, log: () => {}, ...options });
  const send = async (topic: 'notes' | 'gold', value: NoteEventRecord | GoldMentionRecord) => {
    const offset = offsets.get(topic) ?? 0;
    offsets.set(topic, offset + 1);
    const message = { topic, partition: 0, offset: String(offset), timestamp: '0', key: null, value: Buffer.from(JSON.stringify(value)), headers: {} };
    await run!.eachBatch({ topic, partition: 0, messages: [message], membership: { groupId: 'g', memberId: 'm', generationId: 1 }, highWatermark: undefined, isStale: () => false });
  };
  return { updater, send };
}

function noteEvent(noteId: string, text: string, mentions: [id: string, surface: string][]): NoteEventRecord {
  return { noteId, text, mentions: mentions.map(([id, surface]) => ({ id, start: text.indexOf(surface), end: text.indexOf(surface) + surface.length, text: surface, label: 'Disease', score: null })), source: null, timestamp: 0, nerModelVersion: null };
}

function gold(noteId: string, mentionId: string, start: number, end: number, ids: string[]): GoldMentionRecord {
  return { noteId, mentionId, ids, label: 'Disease', start, end, annotator: null, annotatedAt: 0 };
}

const learned = (root: string) => MemoryStore.open(resolveMemoryDir(root).dir, normalizeName).list().map((r) => `${r.mentionId} ${r.text} ${r.ids.join('|')}`);

test('a gold label is learned with the mention of its own span: a note republished with its mention ids reassigned does not lend the label to another mention', async () => {
  const root = join(mkdtempSync(join(tmpdir(), 'cuilink-updater-join-')), 'memory');
  const { updater, send } = harness(root);
  try {
    await updater.start();
    // Version 1 was annotated: m1 = 'DM' at [7, 9). The amended note (same id) now calls 'chest pain' m1.
    const v1 = noteEvent('n1', 'Pt has DM.', [['m1', 'DM']]);
    const v2 = noteEvent('n1', 'Pt denies chest pain; has DM.', [['m1', 'chest pain'], ['m2', 'DM']]);
    await send('notes', v1);
    await send('notes', v2);
    await send('gold', gold('n1', 'm1', 7, 9, ['MESH:D003920']));
    // Gold for the amended version's own m1, arriving before that version on a second note.
    const w1 = noteEvent('n2', 'Hx of gout.', [['m1', 'gout']]);
    const w2 = noteEvent('n2', 'No gout; asthma noted.', [['m1', 'asthma'], ['m2', 'gout']]);
    await send('notes', w1);
    await send('gold', gold('n2', 'm1', 9, 15, ['MESH:D001249']));
    await send('notes', w2);
    await updater.stop();
    assert.deepEqual(learned(root), ['m1 asthma MESH:D001249'], 'chest pain is not diabetes; the asthma label waited for its version');
  } finally {
    await updater.stop();
    rmSync(join(root, '..'), { recursive: true, force: true });
  }
});

test('gold that finds the waiting room full is counted and logged (at most once a minute, counts only, no note text), not dropped silently', async () => {
  const root = join(mkdtempSync(join(tmpdir(), 'cuilink-updater-join-')), 'memory');
  const logs: string[] = [];
  let clock = 0;
  const { updater, send } = harness(root, { maxNotes: 1, log: (line) => logs.push(line), now: () => clock });
  try {
    await updater.start();
    await send('gold', gold('n1', 'm1', 7, 9, ['MESH:D003920']));
    assert.deepEqual([updater.stats.waiting, updater.stats.goldDropped], [1, 0], 'one note\'s gold waits');
    await send('gold', gold('n2', 'm1', 0, 4, ['MESH:D006073']));
    clock = 1_000;
    await send('gold', gold('n3', 'm1', 0, 6, ['MESH:D001249']));
    assert.deepEqual([updater.stats.waiting, updater.stats.goldDropped], [1, 2]);
    const dropped = logs.filter((line) => /dropped/.test(line));
    assert.equal(dropped.length, 1, 'one line for drops within a minute');
    assert.match(dropped[0]!, /^memory-updater: 1 gold label dropped/);
    clock = 61_000;
    await send('gold', gold('n4', 'm1', 0, 6, ['MESH:D001249']));
    assert.equal(updater.stats.goldDropped, 3);
    const later = logs.filter((line) => /dropped/.test(line));
    assert.equal(later.length, 2, 'a minute later, one more');
    assert.match(later[1]!, /^memory-updater: 3 gold labels dropped/, 'with the count so far');
    clock = 62_000;
    await send('gold', gold('n5', 'm1', 0, 6, ['MESH:D001249']));
    assert.equal(logs.filter((line) => /dropped/.test(line)).length, 2, 'within the minute: counted, not logged');
    // The note whose gold waited still resolves it.
    await send('notes', noteEvent('n1', 'Pt has DM.', [['m1', 'DM']]));
    await updater.stop();
    const all = logs.filter((line) => /dropped/.test(line));
    assert.match(all.at(-1)!, /^memory-updater: 4 gold labels dropped/, 'stopping reports the drops since the last line');
    for (const line of all) assert.doesNotMatch(line, /n[1-5]|m1|MESH/, 'no note or mention ids, no labels');
    assert.deepEqual(learned(root), ['m1 DM MESH:D003920']);
  } finally {
    await updater.stop();
    rmSync(join(root, '..'), { recursive: true, force: true });
  }
});
