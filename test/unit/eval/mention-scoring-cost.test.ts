import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { loadKb } from '../../../src/kb/load.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { dcg, gradedRelevance, idealDcg } from '../../../src/eval/metrics/graded-relevance.ts';
import type { MentionRecord } from '../../../src/eval/metrics/mention-record.ts';
import type { OntologyView } from '../../../src/eval/metrics/ontology-view.ts';
import { scoreMention, TOP_K } from '../../../src/eval/metrics/score-mention.ts';
import { fixtureOntology } from './fixture-ontology.ts';
import { lcg } from '../../support/lcg.ts';

// The gold and linked topics are anyone's to write, and one pair used to cost |predicted| × |gold|
// `matches` calls to rank, and |gold| × k graded relevances for nDCG: 50,000 gold ids against
// 5,000 candidates took 18 s, stalling the sidecar evaluator. The scores themselves are the shared
// metrics of offline eval and the sidecar, so the faster path must give every score bit for bit.

// The eval hierarchy (test/fixtures/eval/hierarchy.jsonl) plus concepts that claim the same alt
// ids (DOID:1 by three, ALT:A1 also by FIX:A1, MESH:D000001 by two), one with two parents, and
// one listing a primary id as an alt id (dropped by the store).
const KB_FILES = ['test/fixtures/eval/hierarchy.jsonl', 'test/fixtures/eval/shared-alt-ids.jsonl'];

let view: OntologyView;
let pool: string[];

before(async () => {
  const store = await loadKb(KB_FILES, { format: 'jsonl' });
  view = kbOntologyView(store);
  const kbIds = [...store.values()].flatMap((c) => [c.id, ...c.altIds]);
  // Ids outside the KB, raw forms the store normalizes (a bare MeSH id), case and space variants
  // `matches` compares as written, and names an object has of its own.
  pool = [...new Set([...kbIds, 'D000001', 'fix:a1', ' FIX:A1', 'DOID:3', 'MESH:D999999', '', '__proto__', 'constructor'])];
});

/** The scoring as it was before the set-based match, pair by pair, kept as the reference. */
function pairwiseScores(record: MentionRecord, v: OntologyView) {
  const { goldIds, predicted } = record;
  const rank = predicted.findIndex((id) => goldIds.some((g) => v.matches(id, g)));
  const similarity = (() => {
    if (rank === 0) return 1;
    const predictedId = predicted[0];
    if (predictedId === undefined) return 0;
    const p = v.resolve(predictedId);
    let best = 0;
    for (const goldId of goldIds) {
      if (v.matches(predictedId, goldId)) return 1;
      const g = v.resolve(goldId);
      if (p === undefined || g === undefined) continue;
      const d = p === g ? 0 : v.pathLength(p, g);
      if (d !== undefined) best = Math.max(best, 1 / (1 + d));
    }
    return best;
  })();
  const top = predicted.slice(0, TOP_K);
  let ndcg5 = 0;
  for (const goldId of goldIds) {
    if (v.resolve(goldId) === undefined) continue;
    const value = dcg(top.map((p) => gradedRelevance(p, goldId, v))) / idealDcg(goldId, v, TOP_K);
    if (value > ndcg5) ndcg5 = value;
  }
  return { hit1: rank === 0, hit5: rank >= 0 && rank < TOP_K, reciprocalRank: rank >= 0 ? 1 / (rank + 1) : 0, similarity, ndcg5, goldNil: !goldIds.some((g) => v.resolve(g) !== undefined) };
}

function record(goldIds: string[], predicted: string[]): MentionRecord {
  return { noteId: 'n', mentionId: 'm', goldIds, predicted, nil: false, topScore: 0.5, confidence: 0.5, label: 'Disease', semanticTypes: [] };
}

function draw(random: () => number, n: number): string[] {
  return Array.from({ length: n }, () => pool[Math.floor(random() * pool.length)]!);
}

test('idsMatchedBy names exactly the gold ids matches() accepts, for every pair of ids in and outside the KB', () => {
  for (const [name, v, ids] of [['kb', view, pool], ['fixture', fixtureOntology, [...pool, 'FIX:A1', 'ALT:A1']]] as const) {
    for (const p of ids) {
      const named = new Set(v.idsMatchedBy(p));
      for (const g of ids) assert.equal(named.has(g), v.matches(p, g), `${name}: ${JSON.stringify(p)} → ${JSON.stringify(g)}`);
    }
  }
});

test('on 3,000 random records over the KB fixture the scores are exactly what pair-by-pair matching gave', () => {
  const random = lcg(20_260_417);
  let hits = 0;
  let related = 0;
  for (let i = 0; i < 3000; i++) {
    // Composite gold (duplicates and ids outside the KB included) against up to 12 predictions,
    // duplicates now and then (prediction files are anyone's too).
    const gold = draw(random, Math.floor(random() * 5));
    const predicted = draw(random, Math.floor(random() * 13));
    const r = record(gold, random() < 0.8 ? [...new Set(predicted)] : predicted);
    const expected = pairwiseScores(r, view);
    const { hit1, hit5, reciprocalRank, similarity, ndcg5, goldNil } = scoreMention(r, view);
    assert.deepEqual({ hit1, hit5, reciprocalRank, similarity, ndcg5, goldNil }, expected, `gold ${JSON.stringify(gold)}, predicted ${JSON.stringify(r.predicted)}`);
    if (hit5) hits++;
    if (!hit1 && similarity > 0) related++;
  }
  // The draw reaches every branch: hits, and misses scored by distance.
  assert.ok(hits > 300 && related > 300, `hits ${hits}, related misses ${related}`);
});

/** The view with a count of every call made to it. */
function counting(v: OntologyView): { view: OntologyView; calls: () => number } {
  let calls = 0;
  const counted = new Proxy(v, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { view: counted, calls: () => calls };
}

test('a hostile pair costs calls to the ontology linear in its ids, not their product', () => {
  // Gold: 1,000 ids outside the KB, then one real id 1,000 times. Predicted: 1,000 ids outside the
  // KB, then a child of the gold. Pair by pair that was 2,001 × 2,000 matches() for the rank alone.
  const gold = [...Array.from({ length: 1000 }, (_, i) => `X:g${i}`), ...new Array<string>(1000).fill('FIX:A1')];
  const predicted = [...Array.from({ length: 1000 }, (_, i) => `X:p${i}`), 'FIX:A1a'];
  const { view: counted, calls } = counting(view);
  const scores = scoreMention(record(gold, predicted), counted);
  assert.deepEqual([scores.hit1, scores.hit5, scores.reciprocalRank, scores.similarity, scores.ndcg5], [false, false, 0, 0, 0]);
  assert.ok(calls() <= 4 * (gold.length + predicted.length), `${calls()} calls to the ontology for ${gold.length} gold ids and ${predicted.length} predictions`);
  // The same pair with the child first: the scores that need the ontology, from a deduplicated gold.
  const reordered = scoreMention(record(gold, ['FIX:A1a', ...predicted.slice(0, -1)]), view);
  assert.deepEqual(reordered, scoreMention(record(['FIX:A1'], ['FIX:A1a', ...predicted.slice(0, -1)]), view));
});
