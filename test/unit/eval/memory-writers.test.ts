import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryUpdater } from '../../../src/eval/memory-updater.ts';
import type { BiEncoder } from '../../../src/encode/bi-encoder.ts';
import { MemoryLearner, publishMemory } from '../../../src/link/memory-learner.ts';
import { currentMemoryVersion, resolveMemoryDir } from '../../../src/retrieve/memory-root.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { normalizeName } from '../../../src/text/normalize.ts';
import type { KafkaClient } from '../../../src/stream/kafka/client-types.ts';
import type { RecordCodec } from '../../../src/stream/avro/record-codec.ts';
import { TrigramEncoder } from '../../support/trigram-encoder.ts';

// Two writers of one memory root: the memory updater (online) and an operator's `cuilink memory
// add|remove|erase`. Neither may publish an older copy over the other's change.

const trigram = new TrigramEncoder();
/** The learner with a model-free encoder: what is under test is who publishes over whom. */
const encoder = { modelId: trigram.modelId, modelSha256: 'e'.repeat(64), dims: trigram.dims, batchIndependent: true, manifest: { query: { mode: 'mention' } }, encode: (texts: string[]) => trigram.encode(texts) } as unknown as BiEncoder;
const learner = new MemoryLearner(encoder);
const label = (text: string, id: string, noteId = 'n1') => ({ record: { text, label: 'Disease', ids: [id], source: 'test', time: 1, noteId, mentionId: text } });

async function rootWith(texts: string[]): Promise<string> {
  const root = join(mkdtempSync(join(tmpdir(), 'cuilink-writers-')), 'memory');
  const store = learner.openOrCreate(root);
  await learner.add(store, texts.map((t, i) => label(t, `MESH:D00000${i}`)));
  publishMemory(store, root);
  return root;
}

const served = (root: string) => MemoryStore.open(resolveMemoryDir(root).dir, normalizeName).list().map((r) => r.text).sort();

test('a writer that loaded the memory before another published is refused, and CURRENT keeps the other one\'s version', async () => {
  const root = await rootWith(['wrong label', 'gout']);
  try {
    const late = learner.openOrCreate(root);
    const operator = learner.openOrCreate(root);
    operator.remove([0]);
    const removed = publishMemory(operator, root);
    await learner.add(late, [label('asthma', 'MESH:D001249')]);
    assert.throws(() => publishMemory(late, root), (e: Error & { code?: string; retriable?: boolean }) => e.code === 'MEMORY_CHANGED' && e.retriable === true && /run it again/.test(e.message));
    assert.ok(!existsSync(join(root, late.version!)), 'the refused version is removed (never current, it held the retracted label)');
    assert.equal(currentMemoryVersion(root), removed);
    assert.deepEqual(served(root), ['gout']);
    assert.ok(!existsSync(join(root, '.current.lock')), 'the lock is released');
  } finally {
    rmSync(join(root, '..'), { recursive: true, force: true });
  }
});

test('the memory updater learns on top of what an operator published beside it: a removed label stays removed, added ones stay', async () => {
  const root = await rootWith(['wrong label', 'gout']);
  try {
    const kafka = { consumer: () => ({}) } as unknown as KafkaClient;
    const logs: string[] = [];
    const updater = new MemoryUpdater({ kafka, codec: {} as RecordCodec, notesTopic: 'notes', goldTopic: 'gold', groupId: 'g', root, learner, learnFraction: 1, log: (l) => logs.push(l) });
    const operator = learner.openOrCreate(root);
    operator.remove([0]);
    await learner.add(operator, [label('asthma', 'MESH:D001249', 'n2')]);
    publishMemory(operator, root);
    (updater as unknown as { pending: unknown[] }).pending = [label('pneumonia', 'MESH:D011014', 'n3')];
    await updater.flush();
    assert.deepEqual(served(root), ['asthma', 'gout', 'pneumonia']);
    assert.equal(updater.stats.version, currentMemoryVersion(root));
    assert.ok(logs.some((l) => /published beside us/.test(l)), logs.join('\n'));
  } finally {
    rmSync(join(root, '..'), { recursive: true, force: true });
  }
});
