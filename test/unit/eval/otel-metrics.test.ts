import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LinkedNote } from '../../../src/link/types.ts';
import { SidecarEvaluator } from '../../../src/eval/sidecar/sidecar-evaluator.ts';
import { EvaluatorMetrics } from '../../../src/eval/sidecar/otel-metrics.ts';
import { fixtureOntology } from './fixture-ontology.ts';

const note: LinkedNote = {
  noteId: 'n1', linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 0,
  mentions: [{ mentionId: '0-3', start: 0, end: 3, label: 'Disease', conceptId: 'FIX:A1', conceptName: null, semanticTypes: [], score: 0.9, confidence: null, via: 'dense', nil: false, reranked: false, candidates: [{ conceptId: 'FIX:A1', name: 'A1', semanticTypes: [], score: 0.9, retrievalScore: 0.9, exact: false, via: 'dense' }] }],
};

test('/metrics: a window or group that empties stops showing its old accuracy (NaN, 0 samples)', async () => {
  const ev = new SidecarEvaluator(fixtureOntology, { joiner: { ttlMs: 60_000, maxPending: 100 }, windows: { lastN: 100, lastMs: 1000 }, alerts: { minSamples: 1 } }, () => {}, undefined, 0);
  let now = 0;
  const metrics = new EvaluatorMetrics(() => ev.report(now));
  try {
    ev.addGold({ noteId: 'n1', mentionId: '0-3', ids: ['FIX:A1'], label: 'Disease', start: 0, end: 3 }, 0);
    ev.addLinkedNote(note, 0);
    const series = (text: string) => text.split('\n').filter((l) => /^cuilink_eval_(acc1|samples)\{window="time"/.test(l)).sort();
    assert.deepEqual(series(await metrics.text()), [
      'cuilink_eval_acc1{window="time",by="ner_label",group="Disease"} 1',
      'cuilink_eval_acc1{window="time",by="overall",group="all"} 1',
      'cuilink_eval_acc1{window="time",by="semantic_type",group="T047"} 1',
      'cuilink_eval_samples{window="time",by="ner_label",group="Disease"} 1',
      'cuilink_eval_samples{window="time",by="overall",group="all"} 1',
      'cuilink_eval_samples{window="time",by="semantic_type",group="T047"} 1',
    ]);
    now = 10_000; // the 1 s time window is empty; its groups have left it
    assert.deepEqual(series(await metrics.text()), [
      'cuilink_eval_acc1{window="time",by="ner_label",group="Disease"} NaN',
      'cuilink_eval_acc1{window="time",by="overall",group="all"} NaN',
      'cuilink_eval_acc1{window="time",by="semantic_type",group="T047"} NaN',
      'cuilink_eval_samples{window="time",by="ner_label",group="Disease"} 0',
      'cuilink_eval_samples{window="time",by="overall",group="all"} 0',
      'cuilink_eval_samples{window="time",by="semantic_type",group="T047"} 0',
    ]);
  } finally {
    await metrics.shutdown();
  }
});

/** One note whose mention i has gold label labels[i]: every pair joins and is scored. */
function labelled(ev: SidecarEvaluator, noteId: string, labels: string[], now: number): void {
  const base = note.mentions[0]!;
  labels.forEach((label, i) => ev.addGold({ noteId, mentionId: `m${i}`, ids: ['FIX:A1'], label, start: 0, end: 3 }, now));
  ev.addLinkedNote({ ...note, noteId, mentions: labels.map((_, i) => ({ ...base, mentionId: `m${i}` })) }, now);
}

test('ner_label groups are bounded: the first 32 label-shaped labels, every other label (or free text) under `other`', async () => {
  const options = { joiner: { ttlMs: 60_000, maxPending: 1000 }, windows: { lastN: 1000, lastMs: 3_600_000 }, alerts: { minSamples: 1 } };
  const ev = new SidecarEvaluator(fixtureOntology, options, () => {}, undefined, 0);
  const metrics = new EvaluatorMetrics(() => ev.report(1));
  try {
    const many = Array.from({ length: 40 }, (_, i) => `Label${i}`);
    const text = ['Patient John Smith, 4 Elm St, has metastatic cancer', 'x'.repeat(500), 'Disease"} 1\ncuilink_eval_acc1{', 'Diagnose:\tDM', ''];
    labelled(ev, 'n1', [...many, ...text], 0);
    const groups = (t: string) => [...new Set(t.split('\n').filter((l) => l.startsWith('cuilink_eval_samples{window="count",by="ner_label"')).map((l) => /group="((?:[^"\\]|\\.)*)"/.exec(l)![1]!))].sort();
    const expected = [...many.slice(0, 32), 'other'].sort();
    assert.deepEqual(groups(await metrics.text()), expected);
    const report = ev.report(1);
    assert.deepEqual(Object.keys(report.windows.count.byLabel).sort(), expected);
    assert.equal(report.windows.count.byLabel.other!.n, 8 + text.length);
    // The state file's window entries hold the bounded label, never the producer's text.
    const snapshot = ev.snapshot(1);
    assert.deepEqual([...new Set(snapshot.windows.map((e) => e.mention.label))].sort(), expected);
    // A restart keeps the labels it tracked; a new label still reads as `other`.
    const restarted = new SidecarEvaluator(fixtureOntology, options, () => {}, snapshot, 2);
    labelled(restarted, 'n2', ['Label3', 'Brand-new'], 2);
    const after = restarted.report(2).windows.count.byLabel;
    assert.deepEqual(Object.keys(after).sort(), expected);
    assert.equal(after.Label3!.n, 2);
    assert.equal(after.other!.n, 8 + text.length + 1);
  } finally {
    await metrics.shutdown();
  }
});

test('a state file written before the bound restores with its labels bounded', () => {
  const options = { joiner: { ttlMs: 60_000, maxPending: 1000 }, windows: { lastN: 1000, lastMs: 3_600_000 }, alerts: { minSamples: 1 } };
  const ev = new SidecarEvaluator(fixtureOntology, options, () => {}, undefined, 0);
  labelled(ev, 'n1', ['Disease'], 0);
  const old = ev.snapshot(1);
  const entry = old.windows[0]!;
  old.windows = [...Array.from({ length: 40 }, (_, i) => ({ ...entry, mention: { ...entry.mention, label: `Old${i}` } })), { ...entry, mention: { ...entry.mention, label: 'free text label' } }];
  const restored = new SidecarEvaluator(fixtureOntology, options, () => {}, old, 2);
  const byLabel = restored.report(2).windows.count.byLabel;
  assert.deepEqual(Object.keys(byLabel).sort(), [...Array.from({ length: 32 }, (_, i) => `Old${i}`), 'other'].sort());
  assert.equal(byLabel.other!.n, 9);
});
