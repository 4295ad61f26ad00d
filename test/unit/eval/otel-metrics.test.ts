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
