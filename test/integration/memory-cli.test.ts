import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryAdd, memoryExport, memoryInfo, memoryRemove } from '../../src/cli/commands/memory.ts';
import { resolveMemoryDir } from '../../src/retrieve/memory-root.ts';
import { MemoryStore } from '../../src/retrieve/memory-store.ts';
import { normalizeName } from '../../src/text/normalize.ts';

// The real default bi-encoder; gold JSONL and a PubTator fixture in, export and remove out.
test('memory add (gold JSONL, PubTator), info, export, remove: each change a new version, CURRENT flipped', async () => {
  const root = mkdtempSync(join(tmpdir(), 'cuilink-memory-cli-'));
  try {
    const mem = join(root, 'mem');
    const jsonl = join(root, 'gold.jsonl');
    writeFileSync(jsonl, [
      JSON.stringify({ text: 'sugar sickness', label: 'Disease', conceptId: 'MESH:D003920' }),
      JSON.stringify({ text: 'breast and ovarian cancer', label: 'Disease', conceptId: 'D001943|D010051' }),
    ].join('\n'));
    const encoder = ['--provider', 'cpu', '--threads', '1'];
    assert.equal(await memoryAdd.run(['--memory', mem, '--jsonl', jsonl, ...encoder]), 0);
    const v1 = resolveMemoryDir(mem).version;
    assert.equal(await memoryAdd.run(['--memory', mem, '--corpus', 'test/fixtures/eval/sample.PubTator', ...encoder]), 0);
    const v2 = resolveMemoryDir(mem);
    assert.notEqual(v2.version, v1);
    const store = MemoryStore.open(v2.dir, normalizeName);
    assert.equal(store.manifest!.parent, v1);
    // The composite label counts for both ids (the fixture corpus labels the same surface the same way).
    const composite = store.surfaceCounts('Breast and ovarian cancer');
    assert.deepEqual([...composite.keys()].sort(), ['MESH:D001943', 'MESH:D010051']);
    assert.ok(composite.get('MESH:D001943')! >= 1 && composite.get('MESH:D001943') === composite.get('MESH:D010051'));
    assert.ok(store.size > 2);
    assert.equal(await memoryInfo.run(['--memory', mem, '--json']), 0);
    const out = join(root, 'export.jsonl');
    assert.equal(await memoryExport.run(['--memory', mem, '--out', out]), 0);
    const exported = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; text: string });
    assert.equal(exported.length, store.size);
    assert.equal(await memoryRemove.run(['--memory', mem, '--surface', 'SUGAR sickness']), 0);
    const v3 = MemoryStore.open(resolveMemoryDir(mem).dir, normalizeName);
    assert.equal(v3.size, store.size - 1);
    assert.equal(v3.surfaceCounts('sugar sickness').size, 0);
    assert.equal(await memoryRemove.run(['--memory', mem, '--seq', '99999']), 1, 'nothing matched: memory unchanged');
    // export → add round-trips (the export format is gold JSONL).
    const mem2 = join(root, 'mem2');
    assert.equal(await memoryAdd.run(['--memory', mem2, '--jsonl', out, ...encoder]), 0);
    assert.equal(MemoryStore.open(resolveMemoryDir(mem2).dir, normalizeName).size, exported.length);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
