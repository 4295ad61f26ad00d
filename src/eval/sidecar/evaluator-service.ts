import type { LinkedNote } from '../../link/types.ts';
import type { GoldMention } from '../gold.ts';
import type { OntologyView } from '../metrics/ontology-view.ts';
import { EvaluatorMetrics } from './otel-metrics.ts';
import { startReportServer } from './report-server.ts';
import { SidecarEvaluator, type SidecarOptions, type SidecarReport, type SourceOffset } from './sidecar-evaluator.ts';
import { loadSnapshot, saveSnapshot } from './state-file.ts';

/** What the service reads from: the Kafka adapter implements it; tests may feed it directly. */
export interface EvaluatorSource {
  /**
   * Starts delivering; handlers run one at a time, in each topic-partition's order. `resume`: the
   * restored snapshot's offsets; records below them are in the restored state and are not delivered.
   * `candidatesKept`: the note's candidate lists were cut to that many (see SidecarEvaluator.addLinkedNote).
   */
  start(handlers: { gold: (gold: GoldMention) => void; linkedNote: (note: LinkedNote, candidatesKept?: number) => void }, resume?: SourceOffset[]): Promise<void>;
  /** Per topic-partition, the offset after the last record delivered: saved with each snapshot. */
  positions?(): SourceOffset[];
  /** Commits what has been delivered so far (called right after a snapshot is on disk). */
  commit(): Promise<void>;
  /** Stops delivering; commit() must still work afterwards (the last checkpoint follows). */
  stop(): Promise<void>;
  /** Releases the source after the last commit (e.g. leaves the consumer group). */
  close?(): Promise<void>;
}

export interface EvaluatorServiceOptions extends SidecarOptions {
  stateFile: string;
  /** Snapshot (then commit) at most this often while samples arrive. */
  snapshotIntervalMs: number;
  /** HTTP port for /metrics, /report and /healthz; 0 picks a free one. */
  port: number;
  host?: string;
  log: (line: string) => void;
  now?: () => number;
}

export interface RunningEvaluator {
  url: string;
  report(): SidecarReport;
  /** Snapshot and commit now (what the timer does). */
  checkpoint(): Promise<void>;
  /** Stops the source, writes a last snapshot, commits and closes the server. */
  stop(): Promise<void>;
}

/**
 * The sidecar as a process: restores its windows from the state file, feeds the evaluator from
 * the source, snapshots then commits on a timer (so offsets never run ahead of the state a
 * restart will read), and serves /metrics and /report. The snapshot holds the source's own
 * positions too: a commit that fails, or a crash before it, leaves Kafka's offsets behind the
 * state, and the restarted source skips what the state already holds.
 */
export async function startEvaluatorService(view: OntologyView, source: EvaluatorSource, options: EvaluatorServiceOptions): Promise<RunningEvaluator> {
  const now = options.now ?? Date.now;
  const restored = loadSnapshot(options.stateFile);
  const evaluator = new SidecarEvaluator(view, options, options.log, restored, now());
  if (restored) {
    const r = evaluator.report(now());
    options.log(`evaluator: restored ${options.stateFile}: ${r.windows.count.overall.n} samples in the count window, ${r.join.pendingGold} gold and ${r.join.pendingPredictions} predictions pending`);
  }
  const report = (): SidecarReport => evaluator.report(now());
  const metrics = new EvaluatorMetrics(report);
  const server = await startReportServer({ port: options.port, host: options.host, report, metrics: (req, res) => metrics.handle(req, res) });
  let dirty = false;
  let checkpointing: Promise<void> | undefined;
  const checkpoint = async (): Promise<void> => {
    // One at a time; the snapshot is synchronous, so it sees a consistent evaluator.
    while (checkpointing) await checkpointing;
    checkpointing = (async () => {
      // Both synchronous, with no handler in between: the offsets are exactly what the state holds.
      const offsets = source.positions?.();
      saveSnapshot(options.stateFile, { ...evaluator.snapshot(now()), ...(offsets ? { offsets } : {}) });
      dirty = false;
      await source.commit();
    })();
    try {
      await checkpointing;
    } finally {
      checkpointing = undefined;
    }
  };
  const timer = setInterval(() => {
    evaluator.tick(now());
    if (dirty) checkpoint().catch((error: unknown) => options.log(`evaluator: checkpoint failed: ${(error as Error).message}`));
  }, options.snapshotIntervalMs);
  timer.unref();
  await source.start({
    gold: (gold) => {
      evaluator.addGold(gold, now());
      dirty = true;
    },
    linkedNote: (note, candidatesKept) => {
      evaluator.addLinkedNote(note, now(), candidatesKept);
      dirty = true;
    },
  }, restored?.offsets);
  return {
    url: server.url,
    report,
    checkpoint,
    async stop() {
      clearInterval(timer);
      await source.stop();
      try {
        await checkpoint();
      } finally {
        await source.close?.();
        await server.close();
        await metrics.shutdown();
      }
    },
  };
}
