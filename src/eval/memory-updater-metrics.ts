import type { Meter } from '@opentelemetry/api';
import { memorySequence } from '../telemetry/memory-swap-telemetry.ts';
import type { MemoryUpdaterStats } from './memory-updater.ts';

/**
 * The updater's stats as observable instruments `cuilink.memory_updater.*`, read at collection
 * time (Prometheus: dots become underscores, counters get `_total`). Counts and times only: no
 * note, mention or label text, and no attribute at all (a version name would be a series per snapshot).
 * `stats` returns undefined while there is no updater yet (the model loads).
 */
export function registerMemoryUpdaterInstruments(stats: () => MemoryUpdaterStats | undefined, meter: Meter, now: () => number = Date.now): void {
  const counter = (name: string, description: string) => meter.createObservableCounter(`cuilink.memory_updater.${name}`, { description });
  const gauge = (name: string, description: string) => meter.createObservableGauge(`cuilink.memory_updater.${name}`, { description });
  const learned = counter('labels_learned', 'Gold labels learned into a published memory version');
  const duplicates = counter('duplicates', 'Gold labels the memory already held (a replay after a restart reads every label again)');
  const measureSkipped = counter('measure_skipped', 'Gold labels of measure-stream notes: scored by the evaluator, never learned');
  const erasedSkipped = counter('erased_skipped', 'Gold labels of notes erased from the memory (cuilink memory erase): never learned again');
  const nilSkipped = counter('nil_skipped', 'NIL gold labels (no concept id): the memory learns concepts, so these are never learned');
  const goldDropped = counter('gold_dropped', 'Gold labels dropped unlearned: ahead of their note while the waiting room was full');
  const snapshots = counter('snapshots_written', 'Memory versions published');
  const snapshotsFailed = counter('snapshots_failed', 'Snapshots not published: another writer published meanwhile (retried), or a failure (the updater exits)');
  const pending = gauge('labels_pending', 'Labels joined with their note and not yet in a published version');
  const waiting = gauge('gold_waiting', 'Gold labels waiting for their note');
  const age = gauge('last_snapshot_age_seconds', 'Seconds since this process last published a version (since it started, before its first)');
  const sequence = gauge('memory_version_sequence', 'Sequence number of the version the updater learns on (000007-… → 7; 0 for no memory yet)');
  meter.addBatchObservableCallback(
    (observer) => {
      const s = stats();
      if (s === undefined) return; // still loading the model: nothing counted yet
      observer.observe(learned, s.learned);
      observer.observe(duplicates, s.duplicates);
      observer.observe(measureSkipped, s.measureSkipped);
      observer.observe(erasedSkipped, s.erasedSkipped);
      observer.observe(nilSkipped, s.nilSkipped);
      observer.observe(goldDropped, s.goldDropped);
      observer.observe(snapshots, s.snapshots);
      observer.observe(snapshotsFailed, s.snapshotsFailed);
      observer.observe(pending, s.pending);
      observer.observe(waiting, s.waiting);
      observer.observe(age, Math.max(0, (now() - s.lastSnapshotAt) / 1000));
      observer.observe(sequence, s.version === undefined ? 0 : memorySequence(s.version));
    },
    [learned, duplicates, measureSkipped, erasedSkipped, nilSkipped, goldDropped, snapshots, snapshotsFailed, pending, waiting, age, sequence],
  );
}
