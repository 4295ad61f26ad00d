import type { LinkedNote } from '../../link/types.ts';
import type { GoldMention } from '../gold.ts';
import { joinMention } from '../mention-join.ts';
import type { OntologyView } from '../metrics/ontology-view.ts';
import { MetricsAccumulator } from '../metrics/metrics-accumulator.ts';
import { scoreRecord } from '../metrics/score-mention.ts';
import { assignGroupedCalibrationVariance } from '../metrics/calibration-test.ts';
import { DEFAULT_CALIBRATION_BINS } from '../metrics/metric-units.ts';
import { goldStream, MEMORY_SPLIT_SEED } from '../gold-sampling.ts';
import { AccuracyAlerts, alertLogLine, type AlertRules, type AlertState } from './accuracy-alerts.ts';
import { LabelGroups } from './label-groups.ts';
import { MemoryVersionAccuracy, type MemoryVersionReport, type MemoryVersionSnapshot } from './memory-version-accuracy.ts';
import { MentionJoiner, type JoinCounters, type JoinerLimits, type JoinerSnapshot, type Prediction } from './mention-joiner.ts';
import { RollingWindows, type TimeBucket, type WindowEntry, type WindowLimits, type WindowReports } from './rolling-windows.ts';

export interface SidecarOptions {
  joiner: JoinerLimits;
  windows: WindowLimits;
  alerts: AlertRules;
  /**
   * With a memory learning online: only gold of the *measure* stream is scored (goldStream with the
   * memory updater's fraction and seed), so no mention the memory learned from is ever measured.
   */
  measure?: { learnFraction: number; seed?: number };
  /** Memory versions whose acc@1 is reported apart (the newest; default 20). */
  memoryVersions?: number;
}

/** Gold labels by the stream of their note: learned by the memory, or scored here. */
export interface GoldByStream {
  learn: number;
  measure: number;
}

export const DEFAULT_MEMORY_VERSIONS = 20;

/** Where reading a topic-partition resumes: the offset after the last record the state holds. */
export interface SourceOffset {
  topic: string;
  partition: number;
  next: string;
}

/** Everything a restart needs: window contents, pending half-pairs and counters. */
export interface SidecarSnapshot {
  version: 1;
  savedAt: number;
  /** The count window's samples; in a snapshot without `timeWindow`, the time window's too. */
  windows: WindowEntry[];
  /** The time window as sums per bucket; absent in snapshots written before it was kept so. */
  timeWindow?: TimeBucket[];
  joiner: JoinerSnapshot;
  /** Linked notes seen and joined samples scored since the first start. */
  notesSeen: number;
  goldSeen: number;
  samplesScored: number;
  /** Absent in snapshots written before they were kept. */
  goldByStream?: GoldByStream;
  learnPredictionsDropped?: number;
  byMemoryVersion?: MemoryVersionSnapshot;
  memoryVersion?: string | null;
  /**
   * Set by the service, not the evaluator: per topic-partition, the offset after the last record
   * this state holds. Kafka's committed offsets can lag it (the commit follows the snapshot and
   * may fail), so a restart skips what is below these rather than scoring it twice.
   */
  offsets?: SourceOffset[];
}

export interface SidecarReport {
  at: number;
  windows: WindowReports;
  join: JoinCounters & { pendingGold: number; pendingPredictions: number };
  notesSeen: number;
  goldSeen: number;
  samplesScored: number;
  alerts: AlertState[];
  /** The learn/measure split in force (null: none, every gold label is scored). */
  split: { learnFraction: number; seed: number } | null;
  /** Gold of learn-stream notes, not scored (0 without a measure split): `goldByStream.learn`. */
  learnSkipped: number;
  /** Gold labels each stream took (without a split every label is `measure`). */
  goldByStream: GoldByStream;
  /** Predictions of learn-stream notes, dropped on arrival: their gold never comes here, so they would only wait to expire. */
  learnPredictionsDropped: number;
  /** The memory version of the latest linked note (null: no memory), next to the measure-stream accuracy. */
  memoryVersion: string | null;
  /** acc@1 of the scored (measure-stream) samples by the memory version that linked them: what the memory gained. */
  byMemoryVersion: MemoryVersionReport;
}

/**
 * The sidecar evaluator without Kafka: gold and linked notes go in (in any order), joined
 * samples are scored by the shared metrics module and enter the rolling windows, and alerts are
 * re-judged. The service around it (evaluator-service.ts) feeds it from topics and exports it.
 */
export class SidecarEvaluator {
  private readonly view: OntologyView;
  private readonly joiner: MentionJoiner;
  private readonly windows: RollingWindows;
  private readonly alerts: AccuracyAlerts;
  private readonly log: (line: string) => void;
  private notesSeen: number;
  private goldSeen: number;
  private samplesScored: number;
  private readonly measure: SidecarOptions['measure'];
  private readonly goldByStream: GoldByStream;
  private learnPredictionsDropped: number;
  private readonly byMemoryVersion: MemoryVersionAccuracy;
  private memoryVersion: string | null;
  private readonly labels = new LabelGroups();

  constructor(view: OntologyView, options: SidecarOptions, log: (line: string) => void, restored?: SidecarSnapshot, now = Date.now()) {
    this.view = view;
    this.log = log;
    this.joiner = new MentionJoiner(options.joiner, restored?.joiner, restored ? now - restored.savedAt : 0);
    // A state file written before labels were bounded holds them as the producers sent them.
    const restoredWindows = (restored?.windows ?? []).map((e) => ({ at: e.at, mention: { ...e.mention, label: this.labels.group(e.mention.label) } }));
    // The time window's buckets hold labels as sums, bounded the same way.
    const restoredBuckets = restored?.timeWindow?.map((b) => {
      const sums = new MetricsAccumulator();
      sums.applySums(b.sums, 1, (label) => this.labels.group(label));
      return { start: b.start, sums: sums.sums() };
    });
    this.windows = new RollingWindows(options.windows, restoredWindows, now, restoredBuckets);
    this.alerts = new AccuracyAlerts(options.alerts);
    this.measure = options.measure;
    this.notesSeen = restored?.notesSeen ?? 0;
    this.goldSeen = restored?.goldSeen ?? 0;
    this.samplesScored = restored?.samplesScored ?? 0;
    this.goldByStream = { ...(restored?.goldByStream ?? { learn: 0, measure: 0 }) };
    this.learnPredictionsDropped = restored?.learnPredictionsDropped ?? 0;
    this.byMemoryVersion = new MemoryVersionAccuracy(options.memoryVersions ?? DEFAULT_MEMORY_VERSIONS, restored?.byMemoryVersion);
    this.memoryVersion = restored?.memoryVersion ?? null;
    this.joiner.expire(now);
    this.judge(now);
  }

  addGold(gold: GoldMention, now: number): void {
    this.goldSeen++;
    if (this.learnStream(gold.noteId)) {
      this.goldByStream.learn++;
      return;
    }
    this.goldByStream.measure++;
    const prediction = this.joiner.addGold(gold, now);
    if (prediction) this.score([[gold, prediction]], now);
  }

  /**
   * `candidatesKept`: set when the stage cut the note's candidate lists to fit its output topic
   * (the `cuilink-candidates-cut` header, the most it kept per mention). A mention holding that
   * many may have lost some, so its pair is counted (`candidatesCut`) instead of scored; one
   * holding fewer kept its whole list.
   */
  addLinkedNote(note: LinkedNote, now: number, candidatesKept?: number): void {
    this.notesSeen++;
    this.memoryVersion = note.memoryVersion ?? null;
    if (this.learnStream(note.noteId)) {
      // Never joined (its gold is the memory's), so not kept: counted, not left to expire.
      this.learnPredictionsDropped += note.mentions.length;
      return;
    }
    const joined: [GoldMention, Prediction][] = [];
    for (const mention of note.mentions) {
      const prediction: Prediction = { noteId: note.noteId, mention, memoryVersion: note.memoryVersion ?? null };
      if (candidatesKept !== undefined && mention.candidates.length >= candidatesKept) prediction.cut = true;
      const gold = this.joiner.addPrediction(prediction, now);
      if (gold) joined.push([gold, prediction]);
    }
    // Scored together, so the note's mentions of one concept are one group of the calibration test.
    this.score(joined, now);
  }

  /** Expires pending half-pairs and moves the time window; call periodically. */
  tick(now: number): void {
    this.joiner.expire(now);
    this.windows.advance(now);
    this.judge(now);
  }

  report(now: number): SidecarReport {
    this.tick(now);
    return {
      at: now,
      windows: this.windows.reports(),
      join: { ...this.joiner.counters, pendingGold: this.joiner.pendingGold, pendingPredictions: this.joiner.pendingPredictions },
      notesSeen: this.notesSeen,
      goldSeen: this.goldSeen,
      samplesScored: this.samplesScored,
      alerts: this.alerts.current(),
      split: this.measure ? { learnFraction: this.measure.learnFraction, seed: this.measure.seed ?? MEMORY_SPLIT_SEED } : null,
      learnSkipped: this.goldByStream.learn,
      goldByStream: { ...this.goldByStream },
      learnPredictionsDropped: this.learnPredictionsDropped,
      memoryVersion: this.memoryVersion,
      byMemoryVersion: this.byMemoryVersion.report(),
    };
  }

  snapshot(now: number): SidecarSnapshot {
    return {
      version: 1, savedAt: now, windows: this.windows.retained(), timeWindow: this.windows.timeBuckets(), joiner: this.joiner.snapshot(), notesSeen: this.notesSeen, goldSeen: this.goldSeen, samplesScored: this.samplesScored,
      goldByStream: { ...this.goldByStream }, learnPredictionsDropped: this.learnPredictionsDropped, byMemoryVersion: this.byMemoryVersion.snapshot(),
      memoryVersion: this.memoryVersion,
    };
  }

  /** With a measure split: the note's gold is the memory's to learn, never scored here. */
  private learnStream(noteId: string): boolean {
    return this.measure !== undefined && goldStream(noteId, this.measure.learnFraction, this.measure.seed ?? MEMORY_SPLIT_SEED) === 'learn';
  }

  /**
   * Scores pairs joined at once (a note's mentions whose gold was waiting, or one gold label). Only
   * these are grouped for the calibration test: a group whose gold comes label by label after its
   * note is scored as lone mentions (docs/evaluator.md).
   */
  private score(pairs: readonly [GoldMention, Prediction][], now: number): void {
    // A cut list would read as misses at ranks the linker did fill; the joiner counted the pair.
    const kept = pairs.filter(([, prediction]) => prediction.cut !== true);
    if (kept.length === 0) return;
    const scored = kept.map(([gold, prediction]) => scoreRecord(joinMention({ ...gold, label: this.labels.group(gold.label) }, prediction.mention, this.view), this.view));
    assignGroupedCalibrationVariance(scored, DEFAULT_CALIBRATION_BINS);
    scored.forEach((mention, i) => {
      this.windows.add(mention, now);
      const { memoryVersion } = kept[i]![1];
      // Unknown for a prediction restored from a snapshot written before versions were kept: left out, not taken for "no memory".
      if (memoryVersion !== undefined) this.byMemoryVersion.add(memoryVersion, mention.scores.hit1, now);
      this.samplesScored++;
      this.judge(now);
    });
  }

  private judge(now: number): void {
    const overall = this.windows.overall();
    const changed = [...this.alerts.update('count', overall.count, now), ...this.alerts.update('time', overall.time, now)];
    for (const state of changed) this.log(alertLogLine(state));
  }
}
