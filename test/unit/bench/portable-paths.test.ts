import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { portablePaths } from '../../../bench/bench-index.ts';
import { PACKAGE_ROOT } from '../../../src/kb/package-root.ts';

test('portablePaths: a result line keeps no machine path (repository root dropped, scratch as <tmp>)', () => {
  const scratch = '/tmp/cuilink-bench-memory-AbC123';
  const line = `memory ${scratch}/train: +5 labelled mentions; reranker ${join(PACKAGE_ROOT, 'models', 'default', 'crossencoder')}`;
  assert.equal(portablePaths(line, scratch), 'memory <tmp>/train: +5 labelled mentions; reranker models/default/crossencoder');
  assert.equal(portablePaths('models/default/crossencoder'), 'models/default/crossencoder');
});
