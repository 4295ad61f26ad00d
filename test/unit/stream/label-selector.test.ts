import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LabelSelector, type LabelSelectorOptions } from '../../../src/stream/label-selection/label-selector.ts';
import { goldStream } from '../../../src/stream/label-selection/note-draw.ts';
import { priorityOf, uncertaintyOf } from '../../../src/stream/label-selection/selection-policy.ts';
import type { LinkedMention, LinkedNote } from '../../../src/link/types.ts';
import { normalizeName } from '../../../src/text/normalize.ts';

function mention(id: string, confidence: number | null, extra: Partial<LinkedMention> = {}): LinkedMention {
  return { mentionId: id, start: 0, end: 1, label: 'Disease', conceptId: 'D:1', conceptName: 'x', semanticTypes: [], score: 0.9, confidence, via: 'dense', nil: false, reranked: false, candidates: [{ conceptId: 'D:1', name: 'x', semanticTypes: [], score: 0.9, retrievalScore: 0.9, exact: false, via: 'dense' }], ...extra };
}

/** A note whose mentions are [surface text, confidence] pairs, ids m0, m1, … */
function note(noteId: string, mentions: [string, number | null][]): { note: { noteId: string; mentions: { id: string; text: string }[] }; linked: LinkedNote } {
  return {
    note: { noteId, mentions: mentions.map(([text], i) => ({ id: `m${i}`, text })) },
    linked: { noteId, mentions: mentions.map(([, c], i) => mention(`m${i}`, c)), linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', memoryVersion: null, linkedAt: 0 },
  };
}

function selector(options: Partial<LabelSelectorOptions> = {}): LabelSelector {
  return new LabelSelector({ policy: 'confidence', budget: 2, windowMs: 100, recurrenceExponent: 1, measureFraction: 0, measureBudget: 0, surfaceKey: normalizeName, ...options });
}

function feed(s: LabelSelector, notes: ReturnType<typeof note>[], now: number): void {
  for (const n of notes) s.observe(n.note, n.linked, now);
}

const labelled = (taken: ReturnType<LabelSelector['take']>) => taken.map((p) => `${p.noteId}/${p.mention.mentionId}`);

test('confidence: when the window closes, the budget goes to the least confident surfaces, each surface once', () => {
  const s = selector();
  feed(s, [note('1', [['Breast cancer', 0.9], ['DM', 0.2], ['ataxia', 0.5]]), note('2', [['dm', 0.1], ['Ataxia', 0.6]])], 0);
  assert.deepEqual(s.take(50), [], 'nothing before the window closes');
  const first = s.take(100);
  assert.deepEqual(labelled(first), ['2/m0', '1/m2'], 'DM at its least confident occurrence, then ataxia');
  assert.equal(first[0]!.recurrence, 2, 'the surface occurred twice');
  s.confirm(first);
  feed(s, [note('3', [['DM', 0.05]])], 120);
  const second = s.take(200);
  assert.deepEqual(labelled(second), ['1/m0'], 'a surface asked once is not asked again; the rest waited');
  s.confirm(second);
  assert.deepEqual([s.stats.proposedLearn, s.stats.skippedAsked, s.stats.pool], [3, 1, 0]);
});

test('confidence-recurrence: a doubtful surface the stream keeps repeating is asked before a more doubtful one-off', () => {
  const s = selector({ policy: 'confidence-recurrence', budget: 1, recurrenceExponent: 1 });
  feed(s, [note('1', [['rare thing', 0.1], ['DM', 0.5]]), note('2', [['DM', 0.5]]), note('3', [['DM', 0.5]])], 0);
  const [chosen] = s.take(100);
  assert.equal(chosen!.mention.mentionId, 'm1');
  assert.equal(chosen!.recurrence, 3);
  assert.ok(Math.abs(chosen!.priority - 1.5) < 1e-9, '(1 − 0.5) × 3');
  assert.equal(priorityOf('confidence-recurrence', { noteId: 'x', mentionId: 'y', uncertainty: 0.9, recurrence: 4 }, { seed: 1, recurrenceExponent: 0.5 }), 0.9 * 2);
});

test('need-driven policies skip surfaces the memory already holds; random ones do not', () => {
  const known = (text: string) => normalizeName(text) === 'dm';
  const need = selector({ inMemory: known });
  feed(need, [note('1', [['DM', 0.1], ['ataxia', 0.5]])], 0);
  assert.deepEqual(labelled(need.take(100)), ['1/m1']);
  assert.equal(need.stats.skippedInMemory, 1);
  const random = selector({ policy: 'random-mention', inMemory: known });
  feed(random, [note('1', [['DM', 0.1], ['ataxia', 0.5]])], 0);
  assert.equal(random.take(100).length, 2);
});

test('random-note takes whole notes in draw order', () => {
  const s = selector({ policy: 'random-note', budget: 4 });
  const notes = ['a', 'b', 'c', 'd', 'e'].map((id) => note(id, [['x', 0.9], ['y', 0.9]]));
  feed(s, notes, 0);
  const taken = s.take(100);
  assert.equal(taken.length, 4);
  assert.equal(new Set(taken.map((p) => p.noteId)).size, 2, 'two whole notes');
  const draws = notes.map((n) => ({ id: n.note.noteId, p: priorityOf('random-note', { noteId: n.note.noteId, mentionId: 'm0', uncertainty: 0, recurrence: 1 }, { seed: 1, recurrenceExponent: 0 }) })).sort((a, b) => b.p - a.p);
  assert.deepEqual([...new Set(taken.map((p) => p.noteId))], draws.slice(0, 2).map((d) => d.id), 'the two highest draws');
});

test('the measure slice: every mention of a drawn note at once, never in the learn stream, the same draw as the memory updater', () => {
  const s = selector({ budget: 100, measureFraction: 0.3, measureBudget: 1000, splitSeed: 42 });
  const ids = Array.from({ length: 60 }, (_, i) => `n${i}`);
  feed(s, ids.map((id) => note(id, [['x', 0.1], [`y ${id}`, 0.2]])), 0);
  const measured = s.take(10);
  const measureNotes = new Set(measured.map((p) => p.noteId));
  assert.deepEqual([...measureNotes].sort(), ids.filter((id) => goldStream(id, 0.7, 42) === 'measure').sort());
  assert.ok(measureNotes.size > 5 && measureNotes.size < 35, `about 30% drawn: ${measureNotes.size}`);
  assert.ok(measured.every((p) => p.stream === 'measure' && p.policy === 'random-note'));
  assert.equal(measured.length, 2 * measureNotes.size, 'whole notes');
  const learned = s.take(100);
  assert.ok(learned.length > 0 && learned.every((p) => p.stream === 'learn' && !measureNotes.has(p.noteId)), 'measured notes never learn');
});

test('the measure budget leaves out whole notes and counts them', () => {
  const s = selector({ measureFraction: 1, measureBudget: 3 });
  feed(s, [note('1', [['a', 1], ['b', 1]]), note('2', [['c', 1], ['d', 1]])], 0);
  assert.equal(s.take(1).length, 2);
  assert.equal(s.stats.measureDropped, 2);
});

test('a failed produce puts proposals back: taken again next time, nothing lost, nothing asked twice', () => {
  const s = selector({ budget: 1 });
  feed(s, [note('1', [['DM', 0.1], ['ataxia', 0.5]])], 0);
  const first = s.take(100);
  s.putBack(first);
  assert.equal(s.stats.proposedLearn, 0);
  feed(s, [note('2', [['chorea', 0.3]])], 150);
  const again = s.take(200);
  assert.deepEqual(labelled(again), ['1/m0'], 'the put-back proposal competes again and wins');
  s.confirm(again);
  s.confirm(again);
  assert.equal(s.stats.proposedLearn, 1, 'confirmed once');
  feed(s, [note('3', [['dm', 0.01]])], 250);
  assert.deepEqual(labelled(s.take(300)), ['2/m0'], 'DM was asked: not again');
});

test('a redelivered note is ignored, so its surfaces are not counted twice', () => {
  const s = selector({ policy: 'confidence-recurrence', budget: 1 });
  const n = note('1', [['DM', 0.5]]);
  feed(s, [n, n, n], 0);
  assert.equal(s.stats.repeatedNotes, 2);
  assert.equal(s.take(100)[0]!.recurrence, 1);
});

test('the pool is bounded: the lowest priority candidates are dropped and counted', () => {
  const s = selector({ budget: 1, maxPool: 10 });
  feed(s, [note('1', Array.from({ length: 30 }, (_, i): [string, number] => [`surface ${i}`, i / 30]))], 0);
  assert.ok(s.stats.pool <= 10);
  assert.equal(s.stats.poolDropped, 30 - s.stats.pool);
  assert.deepEqual(labelled(s.take(100)), ['1/m0'], 'the least confident survived');
  const one = selector({ budget: 1, maxPool: 1 });
  feed(one, [note('2', [['surface a', 0.9], ['surface b', 0.1]])], 0);
  assert.equal(one.stats.pool, 1, 'a pool of one keeps one');
  assert.deepEqual(labelled(one.take(100)), ['2/m1']);
});

test('uncertainty: calibrated confidence when there is one, else the top score; NIL without candidates is 1', () => {
  assert.equal(uncertaintyOf(mention('a', 0.8)), 1 - 0.8);
  assert.equal(uncertaintyOf(mention('a', null, { score: 0.7 })), 1 - 0.7);
  assert.equal(uncertaintyOf(mention('a', null, { conceptId: null, nil: true, candidates: [] })), 1);
  assert.throws(() => selector({ measureFraction: 2 }), /measureFraction/);
});

test('a proposal that can never be sent is discarded and counted, not confirmed and not put back', () => {
  const s = selector({ budget: 2 });
  feed(s, [note('1', [['DM', 0.1], ['ataxia', 0.5]])], 0);
  const taken = s.take(100);
  s.discard([taken[0]!]);
  assert.deepEqual(s.confirm(taken).map((p) => p.mention.mentionId), [taken[1]!.mention.mentionId], 'only the sent one is confirmed');
  assert.deepEqual([s.stats.discarded, s.stats.proposedLearn, s.stats.pool], [1, 1, 0]);
});

test('a failed produce gives its share of the budget back to its window: the next take asks again at once, not a window later', () => {
  const s = selector({ budget: 1 });
  feed(s, [note('1', [['DM', 0.1], ['ataxia', 0.5]])], 0);
  const first = s.take(100);
  assert.deepEqual(labelled(first), ['1/m0']);
  s.putBack(first);
  const again = s.take(101);
  assert.deepEqual(labelled(again), ['1/m0'], 'the redelivery asks the window\'s label again');
  s.confirm(again);
  assert.deepEqual(s.take(150), [], 'the window\'s budget is spent: no more before it closes');
  assert.deepEqual(labelled(s.take(200)), ['1/m1'], 'the next window has its own budget');
});
