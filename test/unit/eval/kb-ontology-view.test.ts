import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadKb } from '../../../src/kb/load.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { fixtureOntology } from './fixture-ontology.ts';

const IDS = ['R', 'A', 'B', 'A1', 'A2', 'B1', 'A1a', 'A1b', 'X'].map((x) => `FIX:${x}`);

// The metric tests use distances drawn by hand; this checks src/kb's hierarchy agrees with the drawing.
test('KB view over the fixture hierarchy gives the hand-drawn distances, neighbourhoods and alt-id matches', async () => {
  const store = await loadKb(['test/fixtures/eval/hierarchy.jsonl'], { format: 'jsonl' });
  const view = kbOntologyView(store);
  for (const a of IDS) {
    assert.deepEqual(view.neighbourhoodSizes(a), fixtureOntology.neighbourhoodSizes(a), `neighbourhood of ${a}`);
    assert.deepEqual(view.semanticTypes(a), fixtureOntology.semanticTypes(a));
    for (const b of IDS) assert.equal(view.pathLength(a, b), fixtureOntology.pathLength(a, b), `${a} – ${b}`);
  }
  assert.equal(view.resolve('ALT:A1'), 'FIX:A1');
  assert.equal(view.resolve('MESH:D999999'), undefined);
  assert.ok(view.matches('FIX:A1', 'ALT:A1'));
  assert.ok(!view.matches('FIX:A1a', 'ALT:A1'));
});
