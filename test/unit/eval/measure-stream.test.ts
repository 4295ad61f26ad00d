import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadKb } from '../../../src/kb/load.ts';
import { loadPubTatorCorpus } from '../../../src/eval/gold.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { goldStream } from '../../../src/eval/gold-sampling.ts';
import { SidecarEvaluator, type SidecarOptions } from '../../../src/eval/sidecar/sidecar-evaluator.ts';
import { fakeLinker, SAMPLE_TABLE } from './fake-linker.ts';

const BASE: SidecarOptions = { joiner: { ttlMs: 60_000, maxPending: 1000 }, windows: { lastN: 1000, lastMs: 3_600_000 }, alerts: { minSamples: 50 } };

test('goldStream: deterministic per note id, the fraction of notes learned, the rest measured', () => {
  const ids = Array.from({ length: 2000 }, (_, i) => `note-${i}`);
  const learn = ids.filter((id) => goldStream(id, 0.3) === 'learn').length;
  assert.ok(learn > 500 && learn < 700, String(learn));
  assert.deepEqual(ids.map((id) => goldStream(id, 0.3)), ids.map((id) => goldStream(id, 0.3)));
  assert.equal(ids.every((id) => goldStream(id, 0) === 'measure'), true);
  assert.equal(ids.every((id) => goldStream(id, 1) === 'learn'), true);
});

test('with a measure split the evaluator scores only measure-stream gold and reports the memory version', async () => {
  const corpus = await loadPubTatorCorpus('test/fixtures/eval/sample.PubTator');
  const view = kbOntologyView(await loadKb(['test/fixtures/eval/mini-kb.jsonl'], { format: 'jsonl' }));
  const linked = (await fakeLinker(SAMPLE_TABLE).linkNotes(corpus.notes)).map((n) => ({ ...n, memoryVersion: '000002-abc' }));
  const gold = [...corpus.gold.values()];
  // A seed whose split puts some notes in each stream.
  const seed = [1, 2, 3, 4, 5, 6, 7, 8].find((s) => new Set(corpus.notes.map((n) => goldStream(n.noteId, 0.5, s))).size === 2)!;
  const measured = gold.filter((g) => goldStream(g.noteId, 0.5, seed) === 'measure');
  const ev = new SidecarEvaluator(view, { ...BASE, measure: { learnFraction: 0.5, seed } }, () => {}, undefined, 0);
  gold.forEach((g) => ev.addGold(g, 1));
  linked.forEach((n) => ev.addLinkedNote(n, 2));
  const report = ev.report(3);
  assert.equal(report.samplesScored, measured.length);
  assert.equal(report.learnSkipped, gold.length - measured.length);
  assert.ok(report.learnSkipped > 0 && report.samplesScored > 0);
  assert.equal(report.memoryVersion, '000002-abc');
  const all = new SidecarEvaluator(view, BASE, () => {}, undefined, 0);
  gold.forEach((g) => all.addGold(g, 1));
  linked.forEach((n) => all.addLinkedNote(n, 2));
  assert.equal(all.report(3).samplesScored, gold.length);
  assert.equal(all.report(3).learnSkipped, 0);
});
