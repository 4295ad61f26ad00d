import { test } from 'node:test';
import assert from 'node:assert/strict';
import { trace } from '@opentelemetry/api';
import { CuilinkError, InputError } from '../../../src/kb/errors.ts';
import type { LinkedNote, LinkingCore, NoteInput } from '../../../src/link/types.ts';
import { NoteBatchLinker, isInternalFault, type NoteOutcome, type QueuedNote } from '../../../src/stream/note-batch-linker.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { StageMetrics } from '../../../src/telemetry/stage-metrics.ts';

// Issue #27: only errors proven to be about the record are dead-lettered (`failed` outcomes);
// a model that throws on every call, a plain Error or a TypeError is an internal fault: the
// linker reports it as fatal and rejects, so the stage commits nothing and exits non-zero.

function note(noteId: string): QueuedNote {
  const n: NoteInput = { noteId, text: 'fever', mentions: [{ id: 'm', start: 0, end: 5, text: 'fever', label: 'Phenotype' }] };
  return { note: n, mentionCount: 1 };
}

function linked(n: NoteInput): LinkedNote {
  return { noteId: n.noteId, mentions: [], linkerVersion: 't', modelVersion: 'm', indexVersion: 'i', linkedAt: 0 };
}

/** A core whose linkNotes throws what `fail` returns for the notes given (undefined: links them). */
function core(fail: (notes: NoteInput[], call: number) => unknown): LinkingCore & { calls: number } {
  return {
    calls: 0,
    versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: 'i' },
    async linkNotes(notes: NoteInput[]) {
      const error = fail(notes, ++this.calls);
      if (error !== undefined) throw error;
      return notes.map(linked);
    },
    async close() {},
  };
}

function setUp(linker: LinkingCore) {
  const lines: string[] = [];
  const logger = createLogger({ level: 'debug', sink: (l) => lines.push(l) });
  const metrics = new StageMetrics(() => 0);
  const batch = new NoteBatchLinker(linker, trace.getTracer('test'), metrics, { maxAttempts: 3, initialBackoffMs: 1, maxBackoffMs: 2 }, logger);
  const fatal: unknown[] = [];
  batch.onFatal((error) => fatal.push(error));
  return { batch, fatal, lines, metrics };
}

const kinds = (outcomes: NoteOutcome[]) => outcomes.map((o) => (o.kind === 'failed' ? `failed:${o.error.code}` : 'linked'));

const internalFaults: [string, () => unknown][] = [
  ['a model that throws on every call (INFERENCE_FAILED)', () => new CuilinkError('INFERENCE_FAILED', 'inference failed: Reshape')],
  ['a plain Error', () => new Error('something broke')],
  ['a TypeError from a bug', () => new TypeError("Cannot read properties of undefined (reading 'length')")],
  ['a non-retriable CuilinkError of no listed code', () => new CuilinkError('BAD_MODEL', 'model returned 12 dims, manifest says 384')],
  ['a plain object carrying a record code', () => ({ code: 'BAD_SPAN', message: 'not a CuilinkError' })],
];

for (const [what, make] of internalFaults) {
  test(`${what} on every call: nothing dead-lettered, the batch rejects, the fault is fatal and the linker unavailable`, async () => {
    const { batch, fatal, lines } = setUp(core(() => make()));
    await assert.rejects(batch.link([note('a'), note('b'), note('c')]));
    assert.ok(fatal.length >= 1, 'reported to onFatal');
    assert.equal(batch.available, false);
    assert.notEqual(batch.fatalError, undefined);
    assert.equal(lines.filter((l) => l.includes('internal fault while linking')).length, 1, 'logged once');
    // A lone note too (the path that dead-lettered any non-retriable error before).
    await assert.rejects(batch.link([note('d')]));
    assert.equal(batch.available, false);
  });
}

test('a fault on one note of a batch (the others link alone): the batch rejects with it, nothing is dead-lettered, the log names the note', async () => {
  const { batch, fatal, lines } = setUp(core((notes) => (notes.some((n) => n.noteId === 'poison') ? new TypeError('bug on this input') : undefined)));
  await assert.rejects(batch.link([note('a'), note('poison'), note('c')]), TypeError);
  assert.equal(fatal.length, 1);
  const line = JSON.parse(lines.find((l) => l.includes('internal fault while linking'))!) as { noteId?: string; code?: string };
  assert.equal(line.noteId, 'poison');
  assert.equal(line.code, 'TypeError');
});

test('a batch-wide INFERENCE_FAILED that each note alone does not hit (e.g. out of memory on a big batch): every note linked, no fault', async () => {
  const { batch, fatal } = setUp(core((notes) => (notes.length > 1 ? new CuilinkError('INFERENCE_FAILED', 'out of memory') : undefined)));
  assert.deepEqual(kinds(await batch.link([note('a'), note('b')])), ['linked', 'linked']);
  assert.deepEqual(fatal, []);
  assert.equal(batch.available, true);
});

test('record faults (InputError with a listed code) are dead-lettered note by note; the rest of the batch goes through', async () => {
  const { batch, fatal } = setUp(core((notes) => (notes.some((n) => n.noteId === 'bad') ? new InputError('note bad mention #0: span outside the text', 'BAD_SPAN') : undefined)));
  assert.deepEqual(kinds(await batch.link([note('a'), note('bad'), note('c')])), ['linked', 'failed:BAD_SPAN', 'linked']);
  assert.deepEqual(kinds(await batch.link([note('bad')])), ['failed:BAD_SPAN']);
  assert.deepEqual(fatal, []);
  assert.equal(batch.available, true);
});

test('batches and mentionsLinked count what was linked: not the mentions of dead-lettered notes, nor a batch that failed', async () => {
  const { batch, metrics } = setUp(core((notes, call) => (call === 1 ? new CuilinkError('ENCODER_RESTARTING', 'worker died; restarting it', { retriable: true }) : notes.some((n) => n.noteId === 'bad') ? new InputError('note bad mention #0: span outside the text', 'BAD_SPAN') : undefined)));
  const counted = () => ({ batches: metrics.counts.batches, mentionsLinked: metrics.counts.mentionsLinked });
  await batch.link([note('a'), note('b')]);
  assert.deepEqual(counted(), { batches: 1, mentionsLinked: 2 }, 'a retried attempt is not a batch of its own');
  await batch.link([note('c'), note('bad'), note('d')]);
  assert.deepEqual(counted(), { batches: 2, mentionsLinked: 4 }, 'the dead-lettered note\'s mention was not linked');
  const down = setUp(core(() => new CuilinkError('ENCODER_RESTARTING', 'worker died; restarting it', { retriable: true })));
  await assert.rejects(down.batch.link([note('e')]));
  assert.deepEqual({ batches: down.metrics.counts.batches, mentionsLinked: down.metrics.counts.mentionsLinked }, { batches: 0, mentionsLinked: 0 }, 'handed back: counted when it is read again and linked');
});

test('ENCODER_FAILED is fatal at once, without linking the notes one by one', async () => {
  const linker = core(() => new CuilinkError('ENCODER_FAILED', 'encoder worker could not be kept running'));
  const { batch, fatal } = setUp(linker);
  await assert.rejects(batch.link([note('a'), note('b'), note('c')]), /could not be kept running/);
  assert.equal(linker.calls, 1, 'no narrowing');
  assert.equal((fatal[0] as CuilinkError).code, 'ENCODER_FAILED');
});

test('retriable errors are retried, then rethrown without being fatal (the partition is handed back)', async () => {
  const restarting = () => new CuilinkError('ENCODER_RESTARTING', 'worker died; restarting it', { retriable: true });
  const flaky = setUp(core((_notes, call) => (call <= 2 ? restarting() : undefined)));
  assert.deepEqual(kinds(await flaky.batch.link([note('a'), note('b')])), ['linked', 'linked']);
  assert.equal(flaky.batch.available, true);
  const down = setUp(core(() => restarting()));
  await assert.rejects(down.batch.link([note('a'), note('b')]), /restarting/);
  assert.deepEqual(down.fatal, []);
  assert.equal(down.batch.available, false, 'unready until the next success');
});

test('isInternalFault: anything neither retriable nor a record fault', () => {
  assert.equal(isInternalFault(new CuilinkError('INFERENCE_FAILED', 'x')), true);
  assert.equal(isInternalFault(new Error('x')), true);
  assert.equal(isInternalFault('a string'), true);
  assert.equal(isInternalFault(new CuilinkError('ENCODER_RESTARTING', 'x', { retriable: true })), false);
  assert.equal(isInternalFault(new InputError('x', 'BAD_NOTE')), false);
});
