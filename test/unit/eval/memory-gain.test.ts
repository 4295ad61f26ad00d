// The sidecar evaluator beside a memory that learns online (issue 25, items 4 and 5): predictions
// of learn-stream notes are dropped at once (their gold is never scored here), and the report and
// /metrics say how many gold labels each stream took and acc@1 by the memory version that linked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadKb } from '../../../src/kb/load.ts';
import type { LinkedMention, LinkedNote } from '../../../src/link/types.ts';
import type { GoldMention } from '../../../src/eval/gold.ts';
import { goldStream } from '../../../src/eval/gold-sampling.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import type { OntologyView } from '../../../src/eval/metrics/ontology-view.ts';
import { EvaluatorMetrics } from '../../../src/eval/sidecar/otel-metrics.ts';
import { SidecarEvaluator, type SidecarOptions } from '../../../src/eval/sidecar/sidecar-evaluator.ts';

const SPLIT = { learnFraction: 0.5 };
const OPTIONS: SidecarOptions = { joiner: { ttlMs: 60_000, maxPending: 1000 }, windows: { lastN: 1000, lastMs: 3_600_000 }, alerts: { minSamples: 50 }, measure: SPLIT };
const GOLD_ID = 'MESH:D001943';
const OTHER_ID = 'MESH:D009369';

let view: OntologyView | undefined;
async function ontology(): Promise<OntologyView> {
  view ??= kbOntologyView(await loadKb(['test/fixtures/eval/mini-kb.jsonl'], { format: 'jsonl' }));
  return view;
}

/** Note ids of one stream under SPLIT (the memory updater's draw). */
function idsIn(stream: 'learn' | 'measure', count: number): string[] {
  const out: string[] = [];
  for (let k = 0; out.length < count; k++) if (goldStream(`n${k}`, SPLIT.learnFraction) === stream) out.push(`n${k}`);
  return out;
}

const MENTION = { mentionId: '0-13', start: 0, end: 13, label: 'Disease' };
function linked(noteId: string, conceptId: string, memoryVersion: string | null): LinkedNote {
  const mention: LinkedMention = { ...MENTION, conceptId, conceptName: conceptId, semanticTypes: [], score: 0.9, confidence: null, via: 'dense', nil: false, reranked: false, candidates: [{ conceptId, name: conceptId, semanticTypes: [], score: 0.9, retrievalScore: 0.9, exact: false, via: 'dense' }] };
  return { noteId, linkerVersion: 't', modelVersion: 't', indexVersion: 't', memoryVersion, linkedAt: 0, mentions: [mention] };
}
const gold = (noteId: string): GoldMention => ({ noteId, mentionId: MENTION.mentionId, ids: [GOLD_ID], label: 'Disease', start: 0, end: 13 });

test('with a measure split, predictions of learn-stream notes are dropped at once and counted, not left pending to expire', async () => {
  const ev = new SidecarEvaluator(await ontology(), OPTIONS, () => {}, undefined, 0);
  const [learn] = idsIn('learn', 1);
  const [measure] = idsIn('measure', 1);
  ev.addLinkedNote(linked(learn!, GOLD_ID, null), 0);
  ev.addLinkedNote(linked(measure!, GOLD_ID, null), 0);
  let report = ev.report(1);
  assert.equal(report.join.pendingPredictions, 1, 'only the measure-stream prediction waits for its gold');
  assert.equal(report.learnPredictionsDropped, 1);
  report = ev.report(OPTIONS.joiner.ttlMs + 10);
  assert.equal(report.join.predictionsExpired, 1, 'the learn-stream one never expires: it was never kept');
  // Without a split every prediction may be scored, so every one waits.
  const all = new SidecarEvaluator(await ontology(), { ...OPTIONS, measure: undefined }, () => {}, undefined, 0);
  all.addLinkedNote(linked(learn!, GOLD_ID, null), 0);
  assert.equal(all.report(1).join.pendingPredictions, 1);
  assert.equal(all.report(1).learnPredictionsDropped, 0);
});

test('the report and /metrics: gold labels per stream, acc@1 of measured mentions by memory version (bounded), kept across a restart', async () => {
  const ev = new SidecarEvaluator(await ontology(), { ...OPTIONS, memoryVersions: 2 }, () => {}, undefined, 0);
  const learn = idsIn('learn', 3);
  const m = idsIn('measure', 8);
  for (const id of learn) ev.addGold(gold(id), 1);
  // Linked without a memory (1 of 2 right), then by version 1 (2 of 2) and version 2 (1 of 2).
  const links: [string, string, string | null][] = [
    [m[0]!, GOLD_ID, null], [m[1]!, OTHER_ID, null],
    [m[2]!, GOLD_ID, '000001-aaaa'], [m[3]!, GOLD_ID, '000001-aaaa'],
    [m[4]!, GOLD_ID, '000002-bbbb'], [m[5]!, OTHER_ID, '000002-bbbb'],
  ];
  for (const [id, concept, version] of links) ev.addLinkedNote(linked(id, concept, version), 2);
  for (const [id] of links) ev.addGold(gold(id), 3);
  let report = ev.report(4);
  assert.deepEqual(report.goldByStream, { learn: 3, measure: 6 });
  assert.equal(report.learnSkipped, 3);
  assert.deepEqual(report.split, { learnFraction: 0.5, seed: 20261124 });
  assert.deepEqual(report.byMemoryVersion.noMemory, { n: 2, acc1: 0.5 });
  assert.deepEqual(report.byMemoryVersion.versions.map((v) => [v.memoryVersion, v.sequence, v.n, v.acc1]), [['000001-aaaa', 1, 2, 1], ['000002-bbbb', 2, 2, 0.5]]);
  assert.deepEqual(report.byMemoryVersion.older, { n: 0, acc1: null, versions: 0 });

  // A third version pushes the oldest out (limit 2); a late sample of it is folded in too.
  ev.addLinkedNote(linked(m[6]!, GOLD_ID, '000003-cccc'), 5);
  ev.addGold(gold(m[6]!), 5);
  ev.addLinkedNote(linked(m[7]!, OTHER_ID, '000001-aaaa'), 6);
  ev.addGold(gold(m[7]!), 6);
  report = ev.report(7);
  assert.deepEqual(report.byMemoryVersion.versions.map((v) => [v.memoryVersion, v.n, v.acc1]), [['000002-bbbb', 2, 0.5], ['000003-cccc', 1, 1]]);
  assert.deepEqual(report.byMemoryVersion.older, { n: 3, acc1: 2 / 3, versions: 1 });
  assert.equal(report.samplesScored, 8);

  const restarted = new SidecarEvaluator(await ontology(), { ...OPTIONS, memoryVersions: 2 }, () => {}, JSON.parse(JSON.stringify(ev.snapshot(8))), 8);
  const again = restarted.report(9);
  assert.deepEqual(again.goldByStream, report.goldByStream);
  assert.deepEqual(again.byMemoryVersion, report.byMemoryVersion);

  const metrics = new EvaluatorMetrics(() => ev.report(10));
  try {
    const text = await metrics.text();
    assert.match(text, /^cuilink_eval_gold_by_stream_total\{stream="learn"\} 3$/m);
    assert.match(text, /^cuilink_eval_gold_by_stream_total\{stream="measure"\} 8$/m);
    assert.match(text, /^cuilink_eval_learn_predictions_dropped_total 0$/m);
    // Rank 0 is the newest version; its name is on /report, its sequence a gauge.
    assert.match(text, /^cuilink_eval_memory_version_acc1\{version_rank="0"\} 1$/m);
    assert.match(text, /^cuilink_eval_memory_version_sequence\{version_rank="0"\} 3$/m);
    assert.match(text, /^cuilink_eval_memory_version_acc1\{version_rank="1"\} 0.5$/m);
    assert.match(text, /^cuilink_eval_memory_version_samples\{version_rank="none"\} 2$/m);
    assert.match(text, /^cuilink_eval_memory_version_samples\{version_rank="older"\} 3$/m);
  } finally {
    await metrics.shutdown();
  }
});

test('a snapshot written before these fields restores with zeros, and its pending predictions are left out of the version table', async () => {
  const ev = new SidecarEvaluator(await ontology(), OPTIONS, () => {}, undefined, 0);
  const [measure] = idsIn('measure', 1);
  ev.addLinkedNote(linked(measure!, GOLD_ID, '000004-dddd'), 0);
  const old = JSON.parse(JSON.stringify(ev.snapshot(1))) as Record<string, unknown> & { joiner: { predictions: { value: Record<string, unknown> }[] } };
  delete old.goldByStream;
  delete old.learnPredictionsDropped;
  delete old.byMemoryVersion;
  for (const p of old.joiner.predictions) delete p.value.memoryVersion;
  const restored = new SidecarEvaluator(await ontology(), OPTIONS, () => {}, old as never, 1);
  restored.addGold(gold(measure!), 2);
  const report = restored.report(3);
  assert.equal(report.samplesScored, 1);
  assert.deepEqual(report.goldByStream, { learn: 0, measure: 1 });
  assert.deepEqual(report.byMemoryVersion.versions, []);
  assert.deepEqual(report.byMemoryVersion.noMemory, { n: 0, acc1: null });
});
