import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GoldMention } from '../../../src/eval/gold.ts';
import { MentionJoiner, type Prediction } from '../../../src/eval/sidecar/mention-joiner.ts';

const gold = (note: string, mention: string): GoldMention => ({ noteId: note, mentionId: mention, ids: ['MESH:D000001'], label: 'Disease', start: 0, end: 3 });
const prediction = (note: string, mention: string): Prediction => ({
  noteId: note,
  mention: { mentionId: mention, start: 0, end: 3, label: 'Disease', conceptId: 'MESH:D000001', conceptName: 'x', semanticTypes: [], score: 0.9, confidence: null, via: null, nil: false, reranked: false, candidates: [] },
});

test('joins by (note id, mention id) whichever side arrives first', () => {
  const j = new MentionJoiner({ ttlMs: 1000, maxPending: 10 });
  assert.equal(j.addGold(gold('n1', 'a'), 0), undefined);
  assert.equal(j.addPrediction(prediction('n1', 'a'), 10)?.mentionId, 'a');
  assert.equal(j.addPrediction(prediction('n1', 'b'), 20), undefined);
  assert.equal(j.addGold(gold('n2', 'b'), 30), undefined); // other note: no join
  assert.equal(j.addGold(gold('n1', 'b'), 40)?.mention.mentionId, 'b');
  assert.equal(j.counters.joined, 2);
  assert.equal(j.pendingGold, 1);
  assert.equal(j.pendingPredictions, 0);
});

test('half-pairs older than the TTL expire and are counted per side', () => {
  const j = new MentionJoiner({ ttlMs: 100, maxPending: 10 });
  j.addGold(gold('n1', 'a'), 0);
  j.addPrediction(prediction('n1', 'b'), 50);
  j.expire(120); // gold at 0 is older than 120 − 100 = 20; the prediction at 50 is not
  assert.deepEqual([j.counters.goldExpired, j.counters.predictionsExpired], [1, 0]);
  assert.equal(j.addPrediction(prediction('n1', 'a'), 130), undefined); // its gold is gone
  j.expire(500);
  assert.deepEqual([j.counters.goldExpired, j.counters.predictionsExpired, j.counters.joined], [1, 2, 0]);
  assert.equal(j.pendingGold + j.pendingPredictions, 0);
});

test('beyond maxPending the oldest half-pair is evicted and counted; a repeat replaces', () => {
  const j = new MentionJoiner({ ttlMs: 10_000, maxPending: 3 });
  j.addPrediction(prediction('n1', 'p1'), 1);
  j.addGold(gold('n1', 'g1'), 2);
  j.addPrediction(prediction('n1', 'p2'), 3);
  j.addGold(gold('n1', 'g2'), 4); // 4 pending > 3: p1 (oldest) goes
  assert.deepEqual([j.counters.predictionsEvicted, j.counters.goldEvicted], [1, 0]);
  j.addGold(gold('n1', 'g3'), 5); // g1 is now the oldest
  assert.deepEqual([j.counters.predictionsEvicted, j.counters.goldEvicted], [1, 1]);
  j.addGold(gold('n1', 'g3'), 6);
  assert.equal(j.counters.goldReplaced, 1);
  assert.equal(j.pendingGold + j.pendingPredictions, 3);
});

test('a snapshot restores pending half-pairs and counters', () => {
  const j = new MentionJoiner({ ttlMs: 1000, maxPending: 10 });
  j.addGold(gold('n1', 'a'), 0);
  j.addPrediction(prediction('n1', 'z'), 0);
  j.expire(5000);
  j.addGold(gold('n1', 'b'), 5000);
  const restored = new MentionJoiner({ ttlMs: 1000, maxPending: 10 }, JSON.parse(JSON.stringify(j.snapshot())));
  assert.deepEqual(restored.counters, j.counters);
  assert.equal(restored.addPrediction(prediction('n1', 'b'), 5100)?.mentionId, 'b');
});

test('restored half-pairs age only while the evaluator runs: time since the snapshot does not count', () => {
  const j = new MentionJoiner({ ttlMs: 1000, maxPending: 10 });
  j.addGold(gold('n1', 'a'), 0);
  j.addGold(gold('n1', 'b'), 900);
  const snapshot = JSON.parse(JSON.stringify(j.snapshot()));
  // Saved at 1000, restarted at 1_000_000: the gold is as old as at the stop (1000 and 100 ms).
  const restored = new MentionJoiner({ ttlMs: 1000, maxPending: 10 }, snapshot, 1_000_000 - 1000);
  restored.expire(1_000_000);
  assert.equal(restored.pendingGold, 2);
  restored.expire(1_000_001); // 'a' is now 1001 ms old, 'b' 101 ms
  assert.deepEqual([restored.counters.goldExpired, restored.pendingGold], [1, 1]);
  assert.equal(restored.addPrediction(prediction('n1', 'b'), 1_000_002)?.mentionId, 'b');
});

test('a pair whose prediction had its candidates cut counts as candidatesCut, not joined', () => {
  const j = new MentionJoiner({ ttlMs: 1000, maxPending: 10 });
  j.addGold(gold('n1', 'a'), 0);
  assert.equal(j.addPrediction({ ...prediction('n1', 'a'), cut: true }, 1)?.mentionId, 'a');
  assert.equal(j.addPrediction({ ...prediction('n1', 'b'), cut: true }, 2), undefined);
  assert.equal(j.addGold(gold('n1', 'b'), 3)?.cut, true);
  assert.deepEqual([j.counters.joined, j.counters.candidatesCut], [0, 2]);
});

test('a prediction whose mention id names another span (the note linked again in another version) is not joined with the gold of that id', () => {
  const elsewhere = (note: string, mention: string): Prediction => {
    const p = prediction(note, mention);
    return { ...p, mention: { ...p.mention, start: 10, end: 20 } };
  };
  const j = new MentionJoiner({ ttlMs: 1000, maxPending: 10 });
  j.addPrediction(elsewhere('n1', 'a'), 0);
  assert.equal(j.addGold(gold('n1', 'a'), 10), undefined, 'gold first met by a prediction of another span');
  assert.equal(j.addPrediction(prediction('n1', 'a'), 20)?.mentionId, 'a', 'and joined with the one of its own span');
  assert.equal(j.addGold(gold('n1', 'b'), 30), undefined);
  assert.equal(j.addPrediction(elsewhere('n1', 'b'), 40), undefined, 'prediction second');
  assert.equal(j.counters.joined, 1);
});
