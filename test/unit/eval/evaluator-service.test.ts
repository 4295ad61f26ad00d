import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadKb } from '../../../src/kb/load.ts';
import type { LinkedNote } from '../../../src/link/types.ts';
import { loadPubTatorCorpus, type GoldMention } from '../../../src/eval/gold.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { startEvaluatorService, type EvaluatorSource } from '../../../src/eval/sidecar/evaluator-service.ts';
import { fakeLinker, SAMPLE_TABLE } from './fake-linker.ts';

/** An in-memory source: push() delivers, commits are counted. */
function memorySource() {
  let handlers: Parameters<EvaluatorSource['start']>[0] | undefined;
  const source = {
    commits: 0,
    async start(h: Parameters<EvaluatorSource['start']>[0]) {
      handlers = h;
    },
    async commit() {
      source.commits++;
    },
    async stop() {},
    push(event: { gold: GoldMention } | { note: LinkedNote }) {
      if ('gold' in event) handlers!.gold(event.gold);
      else handlers!.linkedNote(event.note);
    },
  };
  return source;
}

test('service: checkpoint writes the state then commits; a restart on the same file keeps the window', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-evsvc-'));
  try {
    const corpus = await loadPubTatorCorpus('test/fixtures/eval/sample.PubTator');
    const view = kbOntologyView(await loadKb(['test/fixtures/eval/mini-kb.jsonl'], { format: 'jsonl' }));
    const linked = await fakeLinker(SAMPLE_TABLE).linkNotes(corpus.notes);
    const options = {
      joiner: { ttlMs: 60_000, maxPending: 100 }, windows: { lastN: 100, lastMs: 3_600_000 }, alerts: { minSamples: 1 },
      stateFile: join(dir, 'state.json'), snapshotIntervalMs: 60_000, port: 0, host: '127.0.0.1', log: () => {},
    };
    const source = memorySource();
    const first = await startEvaluatorService(view, source, options);
    for (const g of corpus.gold.values()) source.push({ gold: g });
    for (const n of linked) source.push({ note: n });
    await first.checkpoint();
    assert.ok(existsSync(options.stateFile));
    assert.equal(source.commits, 1);
    const before = first.report().windows.count;
    await first.stop();
    assert.equal(source.commits, 2);

    const logs: string[] = [];
    const second = await startEvaluatorService(view, memorySource(), { ...options, log: (l: string) => logs.push(l) });
    try {
      assert.deepEqual(second.report().windows.count, before);
      assert.equal(before.overall.n, 8);
      assert.match(logs[0]!, /restored .*state\.json: 8 samples in the count window/);
      const text = await (await fetch(`${second.url}/metrics`)).text();
      assert.match(text, /^cuilink_eval_samples\{window="count",by="overall",group="all"\} 8$/m);
    } finally {
      await second.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
