import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BiEncoder } from '../../../src/encode/bi-encoder.ts';
import { MemoryLearner } from '../../../src/link/memory-learner.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { buildQuery } from '../../../src/text/context-window.ts';
import { normalizeName } from '../../../src/text/normalize.ts';

test('a label\'s prototype is the vector the linker computes for the same mention alone, whatever else is learned with it', async () => {
  const encoder = await BiEncoder.open('models/default/biencoder', { provider: 'cpu', threads: 1, log: () => {} });
  try {
    assert.equal(encoder.batchIndependent, false, 'the shipped int8 file is per-tensor: batching would change the vectors');
    const texts = ['breast cancer', 'autosomal dominant polycystic kidney disease', 'DM', 'hereditary nonpolyposis colorectal cancer syndrome', 'gout', 'ataxia-telangiectasia'];
    const learner = new MemoryLearner(encoder);
    const store = MemoryStore.empty(learner.model, normalizeName);
    await learner.add(store, texts.map((text, i) => ({ record: { text, label: 'Disease', ids: [`MESH:D00000${i}`], source: 'test', time: 1 } })));
    const spec = encoder.manifest.query;
    for (const text of texts) {
      const [alone] = await encoder.encode([buildQuery(text, { start: 0, end: text.length, text }, spec)]);
      const [nearest] = store.nearest(alone!, 1);
      assert.equal(nearest!.record.text, text);
      assert.ok(nearest!.similarity > 0.99999, `${text}: prototype cosine ${nearest!.similarity} to the mention encoded alone`);
    }
  } finally {
    await encoder.close();
  }
});
