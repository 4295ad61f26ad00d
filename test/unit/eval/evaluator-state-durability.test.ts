import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LinkedNote } from '../../../src/link/types.ts';
import type { GoldMention } from '../../../src/eval/gold.ts';
import { startEvaluatorService } from '../../../src/eval/sidecar/evaluator-service.ts';
import { loadSnapshot } from '../../../src/eval/sidecar/state-file.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { fixtureOntology } from './fixture-ontology.ts';
import { memoryEvaluatorSource } from './memory-evaluator-source.ts';
import { indexOfEvent, journalFs } from '../../support/fs-journal.ts';

// The evaluator commits its Kafka offsets only after its state file is written: a state that is
// not on the disk when the offsets are must not be lost by a full disk or a power cut.

function goldAndNote(noteId: string): { gold: GoldMention; note: LinkedNote } {
  const gold: GoldMention = { noteId, mentionId: '0-3', ids: ['FIX:A1'], label: 'Disease', start: 0, end: 3 };
  const note: LinkedNote = {
    noteId, linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 0,
    mentions: [{ mentionId: '0-3', start: 0, end: 3, label: 'Disease', conceptId: 'FIX:A1', conceptName: 'A1', semanticTypes: [], score: 0.9, confidence: null, via: 'dense', nil: false, reranked: false, candidates: [{ conceptId: 'FIX:A1', name: 'A1', semanticTypes: [], score: 0.9, retrievalScore: 0.9, exact: false, via: 'dense' }] }],
  };
  return { gold, note };
}

/** The evaluator source of these tests: push(noteId) delivers a note's gold and its linked note. */
function memorySource(onCommit?: () => void) {
  const source = memoryEvaluatorSource(onCommit);
  return Object.assign(source, {
    pushPair(noteId: string) {
      const { gold, note } = goldAndNote(noteId);
      source.push({ gold });
      source.push({ note });
    },
  });
}

const options = (dir: string) => ({
  joiner: { ttlMs: 60_000, maxPending: 100 }, windows: { lastN: 100, lastMs: 3_600_000 }, alerts: { minSamples: 1 },
  stateFile: join(dir, 'state.json'), snapshotIntervalMs: 3_600_000, port: 0, host: '127.0.0.1', log: () => {},
});

test('a state write that fails on a full disk commits nothing, keeps the last snapshot whole and leaves no half-written file beside it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-evstate-'));
  const opts = options(dir);
  const source = memorySource();
  const running = await startEvaluatorService(fixtureOntology, source, opts);
  const temporary = `${opts.stateFile}.tmp-${process.pid}`;
  try {
    source.pushPair('n1');
    await running.checkpoint();
    const saved = readFileSync(opts.stateFile, 'utf8');
    source.pushPair('n2');
    // The kernel's own "no space left on device", whoever runs the test (root ignores read-only modes).
    symlinkSync('/dev/full', temporary);
    await assert.rejects(running.checkpoint(), (error: unknown) => error instanceof CuilinkError && error.code === 'STATE_WRITE_FAILED' && /ENOSPC/.test(error.message) && !error.message.includes('\n'));
    assert.equal(source.commits, 1, 'no offsets committed past the state on disk');
    assert.equal(readFileSync(opts.stateFile, 'utf8'), saved, 'the last snapshot is whole');
    assert.equal(loadSnapshot(opts.stateFile)?.samplesScored, 1);
    // The snapshot holds pending gold and predictions with their text: no part of it may stay behind.
    assert.deepEqual(readdirSync(dir), ['state.json'], 'no temporary file left');
    // Space again: the next checkpoint writes both samples, then commits.
    await running.checkpoint();
    assert.equal(source.commits, 2);
    assert.equal(loadSnapshot(opts.stateFile)?.samplesScored, 2);
  } finally {
    rmSync(temporary, { force: true });
    await running.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the state file reaches the disk (the file, then its directory after the rename) before the offsets it covers are committed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-evstate-'));
  const opts = options(dir);
  const journal = journalFs();
  try {
    const source = memorySource(() => journal.mark('commit'));
    const running = await startEvaluatorService(fixtureOntology, source, opts);
    try {
      source.pushPair('n1');
      await running.checkpoint();
    } finally {
      await running.stop();
    }
    const { events } = journal;
    const renamed = indexOfEvent(events, (e) => e.op === 'rename' && e.to === opts.stateFile);
    const commit = indexOfEvent(events, (e) => e.op === 'mark' && e.what === 'commit');
    assert.ok(renamed >= 0 && commit > renamed, JSON.stringify(events));
    const from = (events[renamed] as { from: string }).from;
    const fileSynced = indexOfEvent(events, (e) => e.op === 'fsync' && e.path === from);
    assert.ok(fileSynced >= 0 && fileSynced < renamed, `the temporary file is flushed before it is renamed over the state: ${JSON.stringify(events)}`);
    const dirSynced = indexOfEvent(events.slice(renamed), (e) => e.op === 'fsync' && e.path === dir);
    assert.ok(dirSynced >= 0 && renamed + dirSynced < commit, `the rename is flushed (its directory) before the commit: ${JSON.stringify(events)}`);
  } finally {
    journal.restore();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the state file, which holds pending mention text, is readable by its owner only, also where an older file was not', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-evstate-'));
  const opts = options(dir);
  const previous = process.umask(0o022);
  const source = memorySource();
  const running = await startEvaluatorService(fixtureOntology, source, opts);
  try {
    source.pushPair('n1');
    await running.checkpoint();
    assert.equal(statSync(opts.stateFile).mode & 0o777, 0o600);
    chmodSync(opts.stateFile, 0o644); // as an earlier version wrote it
    source.pushPair('n2');
    await running.checkpoint();
    assert.equal(statSync(opts.stateFile).mode & 0o777, 0o600);
  } finally {
    process.umask(previous);
    await running.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
