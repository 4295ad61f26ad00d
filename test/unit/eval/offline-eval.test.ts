import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadKb } from '../../../src/kb/load.ts';
import { loadPubTatorCorpus } from '../../../src/eval/gold.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { evaluateCorpus } from '../../../src/eval/offline-eval.ts';
import { fakeLinker, SAMPLE_TABLE } from './fake-linker.ts';

test('offline eval links the corpus in batches and scores every gold mention', async () => {
  const corpus = await loadPubTatorCorpus('test/fixtures/eval/sample.PubTator');
  const view = kbOntologyView(await loadKb(['test/fixtures/eval/mini-kb.jsonl'], { format: 'jsonl' }));
  const core = fakeLinker(SAMPLE_TABLE);
  const result = await evaluateCorpus(core, corpus, view, { batchSize: 2 });
  assert.equal(core.calls, 2); // 3 notes in batches of 2
  assert.equal(result.mentions, 8);
  assert.equal(result.missingPredictions, 0);
  const o = result.metrics.overall;
  // Hits at 1: Colon cancer, colon cancer, the composite (ovarian), ochronotic (joint diseases), asthma = 5/8.
  assert.equal(o.acc1, 5 / 8);
  // breast cancer has its gold at rank 2: acc@5 6/8, MRR (5 + ½)/8.
  assert.equal(o.acc5, 6 / 8);
  assert.equal(o.mrr, 5.5 / 8);
  // OMIM:601665 is not in the KB and the fake linker has nothing for it: NIL, rightly.
  assert.equal(o.goldNil, 1);
  assert.equal(o.nilPrecision, 1);
  assert.equal(o.nilRecall, 1);
  // anemia → Anemia, Hemolytic (a child): similarity ½; breast cancer → ovarian (sibling): ⅓.
  const similarity = (5 + 0.5 + 1 / 3) / 8;
  assert.ok(Math.abs(o.similarity! - similarity) < 1e-9);
  assert.deepEqual(Object.keys(result.metrics.byLabel), ['CompositeMention', 'Disease', 'DiseaseClass', 'Modifier', 'SpecificDisease']);
  assert.deepEqual(Object.keys(result.metrics.bySemanticType), ['T047', 'T191']);
});
