// Files that hold note or mention text (PHI) and fail to parse: the error says where, never what.
// V8's JSON.parse messages quote the start of the bad input, so they must not be passed on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../../src/retrieve/memory-store.ts';
import { readPredictions } from '../../src/eval/prediction-file.ts';
import { labelledMentionsFromJsonl } from '../../src/eval/memory-sources.ts';
import { loadSnapshot } from '../../src/eval/sidecar/state-file.ts';
import { readDemoNotes } from '../../src/cli/run-demo.ts';
import { TrigramEncoder, lowerNormalize } from '../support/trigram-encoder.ts';

const SECRET = 'SECRETPATIENT Jane Roe has chest pain';
// A missing quote before the text: the parser fails right where the text starts.
const BROKEN = `{"noteId":"n1","text":${SECRET}"}`;

/** The error's message and everything it carries (cause included), as a logger would serialize it. */
function everything(error: unknown): string {
  const e = error as Error & { cause?: unknown };
  return `${e.message} ${e.cause instanceof Error ? e.cause.message : String(e.cause ?? '')}`;
}

async function refusedWithoutText(read: () => unknown): Promise<void> {
  let thrown: unknown;
  try {
    await read();
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown !== undefined, 'refused');
  assert.doesNotMatch(everything(thrown), /SECRET|Jane/);
  assert.match((thrown as Error).message, /not JSON/);
}

test('a corrupt memory record, predictions line, label line or evaluator state is refused without its text', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-phi-'));
  try {
    const encoder = new TrigramEncoder();
    const store = MemoryStore.empty({ id: 't', sha256: 'd'.repeat(64), dims: encoder.dims }, lowerNormalize);
    store.add([{ text: SECRET, label: 'Disease', ids: ['X:1'], source: 'test', time: 1 }], [encoder.vector(SECRET)]);
    const root = join(dir, 'memory');
    store.save(root);
    const version = readdirSync(root).find((name) => /^\d{6}-/.test(name))!;
    const records = join(root, version, 'records.jsonl');
    writeFileSync(records, readFileSync(records, 'utf8').replace(`"${SECRET}`, SECRET));
    // Without the checksums (a version saved before them) the changed line reaches the parser.
    const manifest = join(root, version, 'manifest.json');
    writeFileSync(manifest, JSON.stringify({ ...JSON.parse(readFileSync(manifest, 'utf8')), checksums: undefined }));
    await refusedWithoutText(() => MemoryStore.open(join(root, version), lowerNormalize));

    const lines = join(dir, 'lines.jsonl');
    writeFileSync(lines, `${BROKEN}\n`);
    await refusedWithoutText(() => readPredictions(lines));
    await refusedWithoutText(() => labelledMentionsFromJsonl(lines));
    await refusedWithoutText(() => loadSnapshot(lines));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a demo notes line that is not JSON is skipped with a reason that quotes none of it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-phi-'));
  try {
    const file = join(dir, 'notes.jsonl');
    writeFileSync(file, `${BROKEN}\n`);
    const { skipped } = readDemoNotes(file);
    assert.equal(skipped.length, 1);
    assert.doesNotMatch(skipped[0]!.reason, /SECRET|Jane/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
