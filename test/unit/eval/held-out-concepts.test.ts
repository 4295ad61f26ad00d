import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HOLD_OUT_SEED, NIL_RULE_MAX_LOSS, NIL_RULE_MIN_PRECISION_IN_KB, NIL_RULE_SEEDS, formatHoldOut, holdOutConcepts, holdOutReport, nilThresholdByRule, pooledHoldOutReport, pooledHoldOutRow, pooledHoldOutSweep, type HeldOutConcepts } from '../../../src/eval/confidence/held-out-concepts.ts';
import { mentionKey, type GoldCorpus, type GoldMention } from '../../../src/eval/gold.ts';
import { emptyPubTatorStats } from '../../../src/eval/pubtator.ts';
import type { ScoredMention } from '../../../src/eval/metrics/mention-record.ts';
import { ConceptStore } from '../../../src/kb/concept-store.ts';
import type { Concept } from '../../../src/kb/concept.ts';
import type { Candidate, LinkedMention } from '../../../src/link/types.ts';

const concept = (id: string, altIds: string[] = []): Concept => ({ id, name: `name of ${id}`, synonyms: [], semanticTypes: ['T047'], parents: [], xrefs: [], altIds });

const A = 'MESH:D000001';
const B = 'MESH:D000002';
const C = 'MESH:D000003';
const D = 'MESH:D000004';
const E = 'MESH:D000005';
const F = 'MESH:D000006';
const G = 'MESH:D000007';
const H = 'MESH:D000008';
const NOT_IN_KB = 'MESH:D999999';

const store = ConceptStore.from([concept(A), concept(B), concept(C), concept(D, ['MESH:C000444']), concept(E), concept(F), concept(G), concept(H), concept('MESH:D000099')]);

/** Gold id lists, one per mention (raw, alt and missing ids included). */
const GOLD_IDS: string[][] = [
  ...Array.from({ length: 6 }, () => [A]),
  ...Array.from({ length: 4 }, () => [B]),
  ...Array.from({ length: 3 }, () => [C]),
  [D],
  ['MESH:C000444'], // D's alt id
  [E],
  ['D000005'], // E, raw
  [A, B], // a composite
  [A, F], // F is named only inside a composite
  [C, NOT_IN_KB], // only C resolves
  [NOT_IN_KB], // a gold NIL of the corpus
  [G],
  [G],
  [H],
];

function corpusOf(golds: string[][]): GoldCorpus {
  const gold = new Map<string, GoldMention>();
  golds.forEach((ids, i) => {
    const noteId = `note${Math.floor(i / 3)}`;
    const mentionId = `${i * 10}-${i * 10 + 5}`;
    gold.set(mentionKey(noteId, mentionId), { noteId, mentionId, ids, label: 'Disease', start: i * 10, end: i * 10 + 5 });
  });
  return { notes: [], gold, stats: emptyPubTatorStats() };
}

const corpus = corpusOf(GOLD_IDS);
const resolvable = (ids: readonly string[]) => [...new Set(ids.flatMap((id) => store.resolveId(id) ?? []))];
/** Mentions with a resolvable gold id, every one of which is in `removed`. */
const stranded = (removed: ReadonlySet<string>) => GOLD_IDS.filter((ids) => resolvable(ids).length > 0 && resolvable(ids).every((id) => removed.has(id))).length;
const goldConcepts = new Set(GOLD_IDS.flatMap(resolvable));
const sorted = (s: Set<string>) => [...s].sort();

test('fixture sanity: the gold resolves as intended', () => {
  assert.equal(corpus.gold.size, GOLD_IDS.length);
  assert.deepEqual(resolvable(['MESH:C000444']), [D]);
  assert.deepEqual(resolvable(['D000005']), [E]);
  assert.deepEqual(resolvable([NOT_IN_KB]), []);
  assert.deepEqual(sorted(goldConcepts), [A, B, C, D, E, F, G, H]);
});

test('the stranded mentions never exceed round(fraction·N) and the draw is maximal', () => {
  const n = GOLD_IDS.length;
  for (const fraction of [0, 0.04, 0.1, 0.2, 0.25, 0.3, 0.5, 0.75]) {
    for (let seed = 1; seed <= 25; seed++) {
      const held = holdOutConcepts(corpus, store, fraction, seed);
      const budget = Math.round(fraction * n);
      const what = `fraction ${fraction}, seed ${seed}`;
      assert.ok(held.drawn <= budget, `${what}: ${held.drawn} > ${budget}`);
      assert.equal(held.drawn, stranded(held.concepts), `${what}: drawn counts the stranded mentions`);
      for (const id of held.concepts) assert.ok(goldConcepts.has(id), `${what}: ${id} is no gold concept`);
      // Greedy: any concept not taken would have pushed the stranded mentions over the budget.
      for (const id of goldConcepts) {
        if (held.concepts.has(id)) continue;
        assert.ok(stranded(new Set([...held.concepts, id])) > budget, `${what}: ${id} still fit`);
      }
    }
  }
});

test('fraction 1 removes every gold concept; the corpus gold NIL is never counted as drawn', () => {
  const held = holdOutConcepts(corpus, store, 1, HOLD_OUT_SEED);
  assert.deepEqual(sorted(held.concepts), sorted(goldConcepts));
  assert.equal(held.drawn, GOLD_IDS.length - 1);
  assert.ok(!held.concepts.has('MESH:D000099'), 'a concept no mention names is never removed');
});

test('fraction 0 strands nothing: only the concept named solely inside a composite goes', () => {
  for (let seed = 1; seed <= 10; seed++) {
    const held = holdOutConcepts(corpus, store, 0, seed);
    assert.equal(held.drawn, 0);
    assert.deepEqual(sorted(held.concepts), [F], `seed ${seed}`);
  }
});

test('the same seed draws the same concepts; other seeds draw others', () => {
  const a = holdOutConcepts(corpus, store, 0.3, 11);
  const b = holdOutConcepts(corpusOf(GOLD_IDS), ConceptStore.from([...store]), 0.3, 11);
  assert.deepEqual(sorted(a.concepts), sorted(b.concepts));
  assert.equal(a.drawn, b.drawn);
  const draws = new Set(Array.from({ length: 20 }, (_, seed) => sorted(holdOutConcepts(corpus, store, 0.3, seed + 100).concepts).join(',')));
  assert.ok(draws.size >= 3, `only ${draws.size} distinct draws over 20 seeds`);
});

test('removed() is true exactly when no gold id is left in the KB', () => {
  for (let seed = 1; seed <= 15; seed++) {
    const held = holdOutConcepts(corpus, store, 0.3, seed);
    for (const ids of GOLD_IDS) {
      const left = resolvable(ids).filter((id) => !held.concepts.has(id));
      assert.equal(held.removed(ids), left.length === 0, `seed ${seed}: ${ids.join('|')}`);
    }
  }
  // A hand-made case: C held out, so [C, missing] is gone; [A, C] is not; alt and raw ids resolve.
  const held = holdOutConcepts(corpusOf([[C], [D], [E], [A], [A], [A], [A], [A], [A], [A]]), store, 0.3, 5);
  assert.equal(held.removed([NOT_IN_KB]), true, 'a gold NIL has nothing left in the KB');
  for (const id of [C, D, E]) {
    const alias = id === D ? 'MESH:C000444' : id === E ? 'D000005' : id;
    assert.equal(held.removed([alias]), held.concepts.has(id), alias);
    assert.equal(held.removed([alias, NOT_IN_KB]), held.concepts.has(id), `${alias} with a missing id`);
    assert.equal(held.removed([alias, A]), held.concepts.has(id) && held.concepts.has(A), `${alias} with A`);
  }
  assert.ok(!held.concepts.has(A), 'A strands 7 of 10 mentions: over the budget of 3');
  assert.deepEqual(sorted(held.concepts), [C, D, E]);
});

function scored(goldIds: string[], hit1: boolean): ScoredMention {
  return {
    noteId: 'n',
    mentionId: 'm',
    goldIds,
    predicted: [],
    nil: false,
    topScore: 0,
    label: 'Disease',
    semanticTypes: [],
    scores: { hit1, hit5: hit1, reciprocalRank: hit1 ? 1 : 0, similarity: 0, ndcg5: 0, goldNil: false, predictedNil: false, confidence: 0 },
  };
}

function linked(confidence: number | null, candidates: number): LinkedMention {
  const cands: Candidate[] = Array.from({ length: candidates }, (_, i) => ({ conceptId: `X:${i}`, name: `c${i}`, semanticTypes: [], score: 0.5, retrievalScore: 0.5, exact: false, via: 'dense' }));
  return { mentionId: 'm', start: 0, end: 1, label: 'Disease', conceptId: cands[0]?.conceptId ?? null, conceptName: cands[0]?.name ?? null, semanticTypes: [], score: 0.5, confidence, via: candidates ? 'dense' : null, nil: candidates === 0, reranked: false, candidates: cands };
}

const heldA: HeldOutConcepts = { concepts: new Set([A]), drawn: 4, removed: (ids) => ids.every((id) => id === A) };

/** Four held-out mentions (gold A) and six others (gold B). */
const RESULT = (() => {
  const rows: [string, boolean, number | null, number][] = [
    // gold, hit1, confidence, candidates
    [A, false, 0.1, 1],
    [A, false, 0.25, 2],
    [A, false, 0.6, 1],
    [A, false, null, 0],
    [B, true, 0.9, 3],
    [B, true, 0.2, 1],
    [B, false, 0.15, 2],
    [B, true, 0.5, 1],
    [B, true, null, 1], // no confidence: never NIL by threshold
    [B, false, null, 0],
  ];
  return { scored: rows.map(([g, hit]) => scored([g], hit)), linked: rows.map(([, , c, k]) => linked(c, k)) };
})();

/** RESULT with a P(in KB) beside each confidence: the held-out mentions low, one wrong other low too. */
const WITH_IN_KB = (() => {
  const inKb = [0.2, 0.3, 0.9, null, 0.95, 0.8, 0.1, 0.9, null, null];
  return { scored: RESULT.scored, linked: RESULT.linked.map((l, i) => ({ ...l, inKb: inKb[i] })) };
})();

/** The thresholds of a linker that decides NIL on confidence alone. */
const onConfidence = (confidence: number) => ({ confidence, inKb: 0 });

const close = (actual: number | null, expected: number, what: string) => {
  assert.ok(actual !== null && Math.abs(actual - expected) < 1e-12, `${what}: ${actual} ≠ ${expected}`);
};

test('holdOutReport: NIL precision, recall, F1 and the others loss at a threshold (hand-computed)', () => {
  const report = holdOutReport(RESULT, heldA, onConfidence(0.3), 77);
  assert.equal(report.seed, 77);
  assert.equal(report.removedConcepts, 1);
  assert.equal(report.drawnMentions, 4);
  assert.equal(report.heldOutMentions, 4);
  assert.equal(report.otherMentions, 6);
  close(report.othersAcc1, 4 / 6, 'othersAcc1');
  // NIL at 0.3: held-out 0.1, 0.25, no candidates; others 0.2, 0.15, no candidates → 3 of 6 right.
  const at = report.atConfigured;
  assert.equal(at.threshold, 0.3);
  close(at.nilPrecision, 0.5, 'precision');
  close(at.nilRecall, 0.75, 'recall');
  close(at.nilF1, 0.6, 'F1');
  // Others linked right: 0.9, 0.5, null-confidence = 3 of 6; at 0 also 0.2 → loss 1/6.
  close(at.othersLinkedAcc1, 0.5, 'othersLinkedAcc1');
  close(at.othersLoss, 1 / 6, 'othersLoss');
  assert.equal(at.othersLost, 1, 'the right other at 0.2');
  assert.equal(at.othersLostMentions, 1);
  assert.equal(holdOutReport(RESULT, heldA, onConfidence(0.3)).seed, HOLD_OUT_SEED);
});

test('holdOutReport sweeps 0.025 … 0.975 and matches the configured row at the same threshold', () => {
  const report = holdOutReport(RESULT, heldA, onConfidence(0.3));
  assert.deepEqual(report.sweep.map((r) => r.threshold), Array.from({ length: 39 }, (_, i) => Math.round((i + 1) * 25) / 1000));
  assert.equal(report.sweep[1]!.threshold, 0.05);
  assert.deepEqual(report.sweep[11], report.atConfigured);
  // At 0.7: every held-out mention NIL (4 of 8 NIL), others right and linked: 0.9 and null → 2/6.
  const high = report.sweep[27]!;
  assert.equal(high.threshold, 0.7);
  close(high.nilPrecision, 0.5, 'precision at 0.7');
  close(high.nilRecall, 1, 'recall at 0.7');
  close(high.nilF1, 2 / 3, 'F1 at 0.7');
  close(high.othersLinkedAcc1, 2 / 6, 'linked at 0.7');
  close(high.othersLoss, 2 / 6, 'loss at 0.7');
  // Recall never falls and the loss never shrinks as the threshold rises.
  for (let i = 1; i < report.sweep.length; i++) {
    assert.ok(report.sweep[i]!.nilRecall! >= report.sweep[i - 1]!.nilRecall!);
    assert.ok(report.sweep[i]!.othersLoss >= report.sweep[i - 1]!.othersLoss - 1e-15);
  }
});

test('holdOutReport at threshold 0: only mentions without candidates are NIL; no loss', () => {
  const at = holdOutReport(RESULT, heldA, onConfidence(0)).atConfigured;
  close(at.nilPrecision, 0.5, 'precision');
  close(at.nilRecall, 0.25, 'recall');
  close(at.nilF1, 1 / 3, 'F1');
  assert.equal(at.othersLoss, 0);
  assert.equal(at.othersLost, 0, 'a mention without candidates is NIL at every threshold: not counted as lost');
  close(at.othersLinkedAcc1, 4 / 6, 'linked');
});

test('holdOutReport gives null precision with no NIL and null recall with nothing held out', () => {
  const allLinked = { scored: RESULT.scored.slice(0, 3), linked: RESULT.linked.slice(0, 3) };
  const none = holdOutReport(allLinked, heldA, onConfidence(0)).atConfigured;
  assert.equal(none.nilPrecision, null);
  assert.equal(none.nilRecall, 0);
  assert.equal(none.nilF1, null);
  const nothingHeld: HeldOutConcepts = { concepts: new Set(), drawn: 0, removed: () => false };
  const report = holdOutReport(RESULT, nothingHeld, onConfidence(0.3));
  assert.equal(report.heldOutMentions, 0);
  assert.equal(report.otherMentions, 10);
  assert.equal(report.atConfigured.nilRecall, null);
  assert.equal(report.atConfigured.nilPrecision, 0);
  assert.equal(report.atConfigured.nilF1, null);
});

test('holdOutReport reads removed() of the real draw', () => {
  const golds = [[A], [A], [B], [B], [B], [C], [C], [C], [C], [C]];
  const held = holdOutConcepts(corpusOf(golds), store, 0.2, 3);
  assert.deepEqual(sorted(held.concepts), [A], 'only A fits a budget of 2');
  const result = { scored: golds.map((g) => scored(g, g[0] !== A)), linked: golds.map((g) => linked(g[0] === A ? 0.1 : 0.8, 1)) };
  const at = holdOutReport(result, held, onConfidence(0.5)).atConfigured;
  assert.equal(at.nilPrecision, 1);
  assert.equal(at.nilRecall, 1);
  assert.equal(at.nilF1, 1);
  assert.equal(at.othersLoss, 0);
  assert.equal(at.othersLinkedAcc1, 1);
});

test('pooledHoldOutSweep: one run is that run\'s sweep; two runs count every mention of each (hand-computed)', () => {
  assert.deepEqual(pooledHoldOutSweep([{ result: RESULT, heldOut: heldA }], 'confidence'), holdOutReport(RESULT, heldA, onConfidence(0)).sweep);
  // The second run holds nothing out: its ten mentions are all others (gold A ones wrong, B as before).
  const nothingHeld: HeldOutConcepts = { concepts: new Set(), drawn: 0, removed: () => false };
  const at = pooledHoldOutSweep([{ result: RESULT, heldOut: heldA }, { result: RESULT, heldOut: nothingHeld }], 'confidence')[11]!;
  assert.equal(at.threshold, 0.3);
  // NIL at 0.3: 6 per run; held out 3 (run 1 only) → precision 3/12, recall 3/4.
  close(at.nilPrecision, 3 / 12, 'pooled precision');
  close(at.nilRecall, 3 / 4, 'pooled recall');
  // Others: 6 + 10, right and linked at 0: 4 + 4; at 0.3: 3 + 3 → loss 2/16.
  close(at.othersLoss, 2 / 16, 'pooled loss');
  // The right link lost in each run is the same mention (confidence 0.2): two links, one mention.
  assert.equal(at.othersLost, 2);
  assert.equal(at.othersLostMentions, 1);
});

test('nilThresholdByRule: the largest threshold within the loss budget; none when the smallest exceeds it', () => {
  const report = holdOutReport(RESULT, heldA, onConfidence(0));
  // The others lose 1/6 from 0.225 (the 0.2 mention) on: only thresholds up to 0.2 are free.
  assert.equal(nilThresholdByRule(report)?.threshold, 0.2);
  assert.equal(nilThresholdByRule(report, 0.2)?.threshold, 0.5, 'a 1/6 loss fits a 0.2 budget until the 0.5 mention goes');
  const costly = { sweep: report.sweep.map((row) => ({ ...row, othersLoss: 0.01 })) };
  assert.equal(nilThresholdByRule(costly), undefined);
  // A precision floor, on WITH_IN_KB's inKb sweep: NIL precision is 1/2 up to 0.1, 1/3 to 0.2, 2/4 to 0.3, 3/5 to 0.8
  // (the right other at 0.8 goes NIL above it), then 3/6 and lower.
  const inKbSweep = { sweep: pooledHoldOutSweep([{ result: WITH_IN_KB, heldOut: heldA }], 'inKb') };
  assert.equal(nilThresholdByRule(inKbSweep, 1, 0.6)?.threshold, 0.8, 'the largest threshold reaching the floor');
  assert.equal(nilThresholdByRule(inKbSweep, 1, 0.61), undefined, 'no threshold reaches 0.61');
  assert.equal(nilThresholdByRule(inKbSweep, 1)?.threshold, 0.975, 'no floor by default');
  assert.equal(NIL_RULE_MAX_LOSS, 0.004);
  assert.equal(NIL_RULE_MIN_PRECISION_IN_KB, 0.8);
  assert.deepEqual(NIL_RULE_SEEDS, [1, 2, 3, 4, 5, 6, 7, 8, HOLD_OUT_SEED]);
});

test('pooledHoldOutRow: the pooled sweep row at one threshold', () => {
  const runs = [{ result: RESULT, heldOut: heldA }, { result: RESULT, heldOut: { concepts: new Set<string>(), drawn: 0, removed: () => false } }];
  assert.deepEqual(pooledHoldOutRow(runs, onConfidence(0.3)), pooledHoldOutSweep(runs, 'confidence')[11]);
});

test('holdOutReport on P(in KB): a config with nil.inKb sweeps inKb; the configured row applies both thresholds (hand-computed)', () => {
  const report = holdOutReport(WITH_IN_KB, heldA, { confidence: 0, inKb: 0.5 });
  assert.equal(report.by, 'inKb');
  // NIL under 0.5 on inKb: held-out 0.2, 0.3, no candidates; others 0.1 (a wrong one), no candidates → 3 of 5.
  const at = report.atConfigured;
  assert.equal(at.threshold, 0.5);
  close(at.nilPrecision, 3 / 5, 'precision');
  close(at.nilRecall, 3 / 4, 'recall');
  assert.equal(at.othersLoss, 0, 'the one other NIL was wrong: nothing lost');
  assert.deepEqual(report.sweep[19], at, 'the 0.5 row of the inKb sweep');
  // With confidence 0.3 as well, the right other at confidence 0.2 goes NIL too.
  const both = holdOutReport(WITH_IN_KB, heldA, { confidence: 0.3, inKb: 0.5 }).atConfigured;
  close(both.nilPrecision, 3 / 6, 'both: precision');
  close(both.othersLoss, 1 / 6, 'both: loss');
  // A config on confidence alone sweeps confidence, whatever inKb the links carry.
  assert.equal(holdOutReport(WITH_IN_KB, heldA, onConfidence(0.3)).by, 'confidence');
  assert.deepEqual(holdOutReport(WITH_IN_KB, heldA, onConfidence(0.3)).sweep, holdOutReport(RESULT, heldA, onConfidence(0.3)).sweep);
});

test('pooledHoldOutSweep on inKb holds the other threshold at the given value', () => {
  const runs = [{ result: WITH_IN_KB, heldOut: heldA }];
  assert.deepEqual(pooledHoldOutSweep(runs, 'inKb')[19], holdOutReport(WITH_IN_KB, heldA, { confidence: 0, inKb: 0.5 }).atConfigured);
  assert.deepEqual(pooledHoldOutSweep(runs, 'inKb', { confidence: 0.3, inKb: 0 })[19], holdOutReport(WITH_IN_KB, heldA, { confidence: 0.3, inKb: 0.5 }).atConfigured);
  assert.deepEqual(pooledHoldOutRow(runs, { confidence: 0, inKb: 0.5 }), pooledHoldOutSweep(runs, 'inKb')[19]);
});

test('pooledHoldOutReport: the pooled rows, each draw\'s own row beside them, and a report that names its seeds', () => {
  const nothingHeld: HeldOutConcepts = { concepts: new Set(), drawn: 0, removed: () => false };
  const runs = [{ result: RESULT, heldOut: heldA, seed: 7 }, { result: RESULT, heldOut: nothingHeld, seed: 8 }];
  const pooled = pooledHoldOutReport(runs, onConfidence(0.3));
  assert.equal(pooled.seed, 7);
  assert.deepEqual(pooled.pooled?.seeds, [7, 8]);
  assert.deepEqual(pooled.atConfigured, pooledHoldOutRow(runs, onConfidence(0.3)));
  assert.deepEqual(pooled.sweep, pooledHoldOutSweep(runs, 'confidence', onConfidence(0.3)));
  assert.deepEqual(pooled.pooled?.perSeed[0]?.row, holdOutReport(RESULT, heldA, onConfidence(0.3), 7).atConfigured);
  assert.deepEqual(pooled.pooled?.perSeed[1]?.row, holdOutReport(RESULT, nothingHeld, onConfidence(0.3), 8).atConfigured);
  assert.equal(pooled.heldOutMentions, 4);
  assert.equal(pooled.otherMentions, 16);
  assert.equal(pooled.removedConcepts, 1);
  const text = formatHoldOut(pooled);
  assert.match(text, /^held-out concepts \(seeds 7, 8, pooled\): 1 concepts removed/);
  assert.match(text, /^ {2}seed 7: 1 concepts removed, 4 must be NIL; NIL-P 0\.500, NIL-R 0\.750, NIL-F1 0\.600; the others lose 0\.167 \(1\)$/m);
  assert.match(text, /^ {2}seed 8: 0 concepts removed, 0 must be NIL; NIL-P 0\.000, NIL-R —, NIL-F1 —; the others lose 0\.100 \(1\)$/m);
  assert.match(formatHoldOut(holdOutReport(RESULT, heldA, onConfidence(0.3), 7)), /^held-out concepts \(seed 7\):/);
  assert.throws(() => pooledHoldOutReport([], onConfidence(0.3)), /no runs/);
});
