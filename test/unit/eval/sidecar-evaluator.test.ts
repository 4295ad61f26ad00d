import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadKb } from '../../../src/kb/load.ts';
import type { LinkedNote } from '../../../src/link/types.ts';
import { loadPubTatorCorpus } from '../../../src/eval/gold.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { evaluateCorpus } from '../../../src/eval/offline-eval.ts';
import { seededRandom } from '../../../src/eval/seeded-random.ts';
import { SidecarEvaluator, type SidecarOptions } from '../../../src/eval/sidecar/sidecar-evaluator.ts';
import { loadSnapshot, saveSnapshot } from '../../../src/eval/sidecar/state-file.ts';
import { EvaluatorMetrics } from '../../../src/eval/sidecar/otel-metrics.ts';
import { startReportServer } from '../../../src/eval/sidecar/report-server.ts';
import { fakeLinker, SAMPLE_TABLE } from './fake-linker.ts';
import { fixtureOntology } from './fixture-ontology.ts';

const OPTIONS: SidecarOptions = { joiner: { ttlMs: 60_000, maxPending: 1000 }, windows: { lastN: 1000, lastMs: 3_600_000 }, alerts: { floor: 0.7, minSamples: 4 } };

async function fixture() {
  const corpus = await loadPubTatorCorpus('test/fixtures/eval/sample.PubTator');
  const view = kbOntologyView(await loadKb(['test/fixtures/eval/mini-kb.jsonl'], { format: 'jsonl' }));
  const linked = await fakeLinker(SAMPLE_TABLE).linkNotes(corpus.notes);
  return { corpus, view, linked };
}

test('sidecar numbers equal offline eval on the same mentions, whatever the arrival order', async () => {
  const { corpus, view, linked } = await fixture();
  const offline = await evaluateCorpus(fakeLinker(SAMPLE_TABLE), corpus, view);
  const events = [...[...corpus.gold.values()].map((g) => ({ gold: g })), ...linked.map((n) => ({ note: n }))];
  for (const seed of [1, 2, 3]) {
    const rng = seededRandom(seed);
    const shuffled = events.map((e) => ({ e, k: rng() })).sort((a, b) => a.k - b.k).map((x) => x.e);
    const logs: string[] = [];
    const ev = new SidecarEvaluator(view, OPTIONS, (l) => logs.push(l), undefined, 0);
    shuffled.forEach((e, i) => ('gold' in e ? ev.addGold(e.gold, i) : ev.addLinkedNote(e.note, i)));
    const report = ev.report(shuffled.length);
    const { limit: _limit, ...count } = report.windows.count;
    assert.deepEqual(count, offline.metrics, `seed ${seed}`);
    assert.equal(report.join.joined, 8);
    assert.equal(report.samplesScored, 8);
    // acc@1 ends at 0.625 < floor 0.7: both windows fire. Lines are logged on changes only, so
    // per window they alternate firing / resolved and end on firing.
    assert.ok(report.alerts.every((a) => a.firing));
    for (const window of ['count', 'time']) {
      const mine = logs.filter((l) => l.includes(`the ${window} window`)).map((l) => l.split(':')[0]);
      assert.ok(mine.length > 0 && mine.every((l, i) => l === (i % 2 === 0 ? 'ALERT firing' : 'ALERT resolved')), mine.join(', '));
      assert.equal(mine.length % 2, 1);
    }
  }
});

test('restart from the state file keeps the windows, pending half-pairs and counters', async () => {
  const { corpus, view, linked } = await fixture();
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-sidecar-'));
  try {
    const file = join(dir, 'state.json');
    assert.equal(loadSnapshot(file), undefined);
    const first = new SidecarEvaluator(view, OPTIONS, () => {}, undefined, 0);
    for (const g of corpus.gold.values()) first.addGold(g, 10);
    first.addLinkedNote(linked[0]!, 20); // note 1001 joins 5 mentions; 3 gold stay pending
    saveSnapshot(file, first.snapshot(30));
    const second = new SidecarEvaluator(view, OPTIONS, () => {}, loadSnapshot(file), 40);
    assert.deepEqual(second.report(40).windows, first.report(40).windows);
    for (const note of linked.slice(1)) second.addLinkedNote(note, 50);
    const report = second.report(60);
    assert.equal(report.windows.count.overall.n, 8);
    assert.equal(report.join.joined, 8);
    assert.equal(report.goldSeen, 8);
    writeFileSync(file, '{oops');
    assert.throws(() => loadSnapshot(file), /is not JSON/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('unmatched gold and predictions expire after the TTL and are counted', async () => {
  const { corpus, view, linked } = await fixture();
  const ev = new SidecarEvaluator(view, { ...OPTIONS, joiner: { ttlMs: 100, maxPending: 1000 } }, () => {}, undefined, 0);
  for (const g of corpus.gold.values()) if (g.noteId === '1001') ev.addGold(g, 0); // 5 gold, never linked
  ev.addLinkedNote(linked[2]!, 50); // note 1003: 1 prediction, never labelled
  const report = ev.report(1000);
  assert.equal(report.join.goldExpired, 5);
  assert.equal(report.join.predictionsExpired, 1);
  assert.equal(report.join.pendingGold + report.join.pendingPredictions, 0);
  assert.equal(report.windows.count.overall.n, 0);
});

test('baseline alert: fires when acc@1 drops more than the margin, resolves when it recovers', async () => {
  const { corpus, view, linked } = await fixture();
  const logs: string[] = [];
  const ev = new SidecarEvaluator(view, { ...OPTIONS, windows: { lastN: 8, lastMs: 3_600_000 }, alerts: { baseline: 0.8, margin: 0.1, minSamples: 8 } }, (l) => logs.push(l), undefined, 0);
  for (const g of corpus.gold.values()) ev.addGold(g, 1);
  for (const n of linked) ev.addLinkedNote(n, 2); // acc@1 0.625 < 0.8 − 0.1
  assert.deepEqual(logs, ['ALERT firing: acc@1 0.625 in the count window is below baseline − margin (0.700)', 'ALERT firing: acc@1 0.625 in the time window is below baseline − margin (0.700)']);
  // Re-send the 8 mentions, now all linked to their gold: the count window turns over to acc@1 1.
  const perfect = fakeLinker(Object.fromEntries([...corpus.gold.values()].map((g) => [corpus.notes.find((n) => n.noteId === g.noteId)!.text.slice(g.start, g.end).toLowerCase(), g.ids])));
  for (const g of corpus.gold.values()) ev.addGold(g, 3);
  for (const n of await perfect.linkNotes(corpus.notes)) ev.addLinkedNote(n, 4);
  // The count window (last 8) crosses back over 0.7 at 6 hits of 8; the time window (all so far) at 7 of 10.
  assert.match(logs[2]!, /^ALERT resolved: acc@1 0\.750 in the count window/);
  assert.match(logs[3]!, /^ALERT resolved: acc@1 0\.700 in the time window/);
  const report = ev.report(5);
  assert.equal(report.windows.count.overall.acc1, 1);
  assert.equal(report.windows.time.overall.acc1, 13 / 16);
  // /metrics is the OpenTelemetry instruments through the Prometheus exporter: one path, same names.
  const metrics = new EvaluatorMetrics(() => report);
  try {
    const text = await metrics.text();
    assert.match(text, /^cuilink_eval_alert\{rule="baseline",window="count"\} 0$/m);
    assert.match(text, /^cuilink_eval_acc1\{window="count",by="overall",group="all"\} 1$/m);
    assert.match(text, /^cuilink_eval_acc1\{window="time",by="ner_label",group="SpecificDisease"\} /m);
    assert.match(text, /^cuilink_eval_join_total\{outcome="joined"\} 16$/m);
    // Every join outcome is exported, the replaced ones included (they had drifted off the OTel side).
    for (const outcome of ['gold_expired', 'predictions_expired', 'gold_evicted', 'predictions_evicted', 'gold_replaced', 'predictions_replaced']) {
      assert.match(text, new RegExp(`^cuilink_eval_join_total\\{outcome="${outcome}"\\} \\d+$`, 'm'), outcome);
    }
    assert.match(text, /^cuilink_eval_window_limit\{window="count"\} 8$/m);
    assert.match(text, /^cuilink_eval_samples_scored_total \d+$/m);
    assert.match(text, /^cuilink_eval_pending\{side="gold"\} \d+$/m);
  } finally {
    await metrics.shutdown();
  }
});

test('report server: /metrics is Prometheus text, /report the JSON report, others 404', async () => {
  const { view } = await fixture();
  const ev = new SidecarEvaluator(view, OPTIONS, () => {}, undefined, 0);
  const exported = new EvaluatorMetrics(() => ev.report(1));
  const server = await startReportServer({ port: 0, host: '127.0.0.1', report: () => ev.report(1), metrics: (req, res) => exported.handle(req, res) });
  try {
    const metrics = await fetch(`${server.url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.headers.get('content-type')!, /text\/plain/);
    const body = await metrics.text();
    // An empty window has no acc@1 yet (no series), but its sample count is there.
    assert.match(body, /# TYPE cuilink_eval_samples gauge/);
    assert.match(body, /^cuilink_eval_samples\{window="count",by="overall",group="all"\} 0$/m);
    assert.match(body, /# TYPE cuilink_eval_join_total counter/);
    const report = (await (await fetch(`${server.url}/report`)).json()) as { windows: { count: { limit: number } } };
    assert.equal(report.windows.count.limit, 1000);
    assert.equal((await fetch(`${server.url}/nope`)).status, 404);
  } finally {
    await server.close();
  }
});

// One mention of note n1 over the fixture hierarchy, gold FIX:A1.
const GOLD_A1 = { noteId: 'n1', mentionId: '0-3', ids: ['FIX:A1'], label: 'Disease', start: 0, end: 3 };
const candidate = (id: string) => ({ conceptId: id, name: id, semanticTypes: [], score: 0.5, retrievalScore: 0.5, exact: false, via: 'dense' as const });
function noteN1(candidates: string[], extra: Partial<LinkedNote> = {}): LinkedNote {
  const mention = { mentionId: '0-3', start: 0, end: 3, label: 'Disease', conceptId: candidates[0] ?? null, conceptName: null, semanticTypes: [], score: 0.5, confidence: null, via: 'dense' as const, nil: candidates.length === 0, reranked: false, candidates: candidates.map(candidate) };
  return { noteId: 'n1', mentions: [mention], linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 0, ...extra };
}
const SMALL: SidecarOptions = { joiner: { ttlMs: 30 * 60_000, maxPending: 100 }, windows: { lastN: 100, lastMs: 3_600_000 }, alerts: { minSamples: 1 } };

test('a restart after downtime longer than the TTL still joins pending gold with its prediction from the backlog', () => {
  const first = new SidecarEvaluator(fixtureOntology, SMALL, () => {}, undefined, 0);
  first.addGold(GOLD_A1, 0);
  const snapshot = JSON.parse(JSON.stringify(first.snapshot(1000)));
  const second = new SidecarEvaluator(fixtureOntology, SMALL, () => {}, snapshot, 3_600_000); // down for an hour, TTL 30 min
  second.addLinkedNote(noteN1(['FIX:A1']), 3_600_001);
  const report = second.report(3_600_002);
  assert.deepEqual([report.join.joined, report.join.goldExpired, report.samplesScored], [1, 0, 1]);
});

test('the memory version of the latest note survives a restart', () => {
  const first = new SidecarEvaluator(fixtureOntology, SMALL, () => {}, undefined, 0);
  first.addLinkedNote(noteN1(['FIX:A1'], { memoryVersion: '000007-abc' }), 0);
  const second = new SidecarEvaluator(fixtureOntology, SMALL, () => {}, JSON.parse(JSON.stringify(first.snapshot(1))), 2);
  assert.equal(second.report(3).memoryVersion, '000007-abc');
});

test('mentions whose candidate list the stage cut are counted as candidates_cut, not scored as misses', async () => {
  const ev = new SidecarEvaluator(fixtureOntology, SMALL, () => {}, undefined, 0);
  ev.addGold(GOLD_A1, 0);
  ev.addLinkedNote(noteN1([]), 1, 0); // a NIL mention whose candidates (A1 first) were all cut
  ev.addGold({ ...GOLD_A1, noteId: 'n2' }, 2);
  ev.addLinkedNote({ ...noteN1(['FIX:A1']), noteId: 'n2' }, 3, 2); // one candidate of two kept: its whole list
  const report = ev.report(4);
  assert.deepEqual([report.join.candidatesCut, report.join.joined, report.samplesScored, report.join.pendingGold], [1, 1, 1, 0]);
  assert.equal(report.windows.count.overall.acc1, 1);
  const metrics = new EvaluatorMetrics(() => report);
  try {
    assert.match(await metrics.text(), /^cuilink_eval_join_total\{outcome="candidates_cut"\} 1$/m);
  } finally {
    await metrics.shutdown();
  }
});

test('ECE and reliability bins read only links with a calibrated confidence and candidates, in both windows, as the count window rolls', async () => {
  const linked = (noteId: string, candidates: string[], confidence: number | null): LinkedNote => {
    const note = noteN1(candidates, { noteId });
    return { ...note, mentions: note.mentions.map((m) => ({ ...m, confidence })) };
  };
  const ev = new SidecarEvaluator(fixtureOntology, { ...SMALL, windows: { lastN: 2, lastMs: 3_600_000 } }, () => {}, undefined, 0);
  const feed = (note: LinkedNote, at: number) => {
    ev.addGold({ ...GOLD_A1, noteId: note.noteId }, at);
    ev.addLinkedNote(note, at);
  };
  const binned = (s: { reliability: { n: number }[] }) => s.reliability.reduce((n, b) => n + b.n, 0);
  const metrics = new EvaluatorMetrics(() => ev.report(10));
  const eceLines = async () => (await metrics.text()).split('\n').filter((l) => /^cuilink_eval_ece\{window="(count|time)",by="overall"/.test(l)).sort();
  // The calibration test's p follows the ECE's rules: none without a calibrated link, NaN once it had one and has none.
  const pLines = async () => (await metrics.text()).split('\n').filter((l) => /^cuilink_eval_calibration_p\{window="(count|time)",by="overall"/.test(l)).sort();
  // One link at 0.8, right: χ² 0.2² / (0.8 · 0.2) = 0.25 on 1 df.
  const oneLinkP = /^0\.617\d*$/;
  try {
    feed(linked('n1', ['FIX:A1'], null), 1); // a linker without a calibration
    feed(linked('n2', [], null), 2); // no candidates
    let { count, time } = ev.report(3).windows;
    for (const s of [count.overall, time.overall, count.byLabel.Disease!]) assert.deepEqual([s.n, s.ece, binned(s)], [2, null, 0]);
    assert.deepEqual(await eceLines(), [], 'no ECE exported: there is none');
    assert.deepEqual(await pLines(), [], 'no calibration p exported: there is none');
    assert.equal(count.overall.calibrationP, null);
    feed(linked('n3', ['FIX:A1'], 0.8), 4); // calibrated, right: gap 0.2; the count window drops n1
    ({ count, time } = ev.report(5).windows);
    assert.deepEqual([count.overall.n, count.overall.ece, binned(count.overall)], [2, 0.2, 1]);
    assert.deepEqual([time.overall.n, time.overall.ece, binned(time.overall)], [3, 0.2, 1]);
    assert.deepEqual(await eceLines(), ['cuilink_eval_ece{window="count",by="overall",group="all"} 0.2', 'cuilink_eval_ece{window="time",by="overall",group="all"} 0.2']);
    assert.deepEqual((await pLines()).map((l) => oneLinkP.test(l.split(' ')[1]!)), [true, true]);
    feed(linked('n4', [], null), 6);
    feed(linked('n5', ['FIX:A1'], null), 7); // n3 leaves the count window: no calibrated link is left in it
    ({ count, time } = ev.report(8).windows);
    assert.deepEqual([count.overall.n, count.overall.ece, binned(count.overall)], [2, null, 0]);
    assert.deepEqual([time.overall.n, time.overall.ece, binned(time.overall)], [5, 0.2, 1]);
    assert.deepEqual(await eceLines(), ['cuilink_eval_ece{window="count",by="overall",group="all"} NaN', 'cuilink_eval_ece{window="time",by="overall",group="all"} 0.2']);
    const [countP, timeP] = await pLines();
    assert.equal(countP, 'cuilink_eval_calibration_p{window="count",by="overall",group="all"} NaN');
    assert.match(timeP!.split(' ')[1]!, oneLinkP);
    assert.equal(count.overall.calibrationP, null);
  } finally {
    await metrics.shutdown();
  }
});
