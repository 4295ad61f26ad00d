import type { LinkedNote } from '../../link/types.ts';
import type { GoldMention } from '../gold.ts';
import { joinMention } from '../mention-join.ts';
import type { OntologyView } from '../metrics/ontology-view.ts';
import { scoreRecord } from '../metrics/score-mention.ts';
import { goldStream, MEMORY_SPLIT_SEED } from '../gold-sampling.ts';
import { AccuracyAlerts, alertLogLine, type AlertRules, type AlertState } from './accuracy-alerts.ts';
import { MentionJoiner, type JoinCounters, type JoinerLimits, type JoinerSnapshot, type Prediction } from './mention-joiner.ts';
import { RollingWindows, type WindowEntry, type WindowLimits, type WindowReports } from './rolling-windows.ts';

export interface SidecarOptions {
  joiner: JoinerLimits;
  windows: WindowLimits;
  alerts: AlertRules;
  /**
   * With a memory learning online: only gold of the *measure* stream is scored (goldStream with the
   * memory updater's fraction and seed), so no mention the memory learned from is ever measured.
   */
  measure?: { learnFraction: number; seed?: number };
}

/** Everything a restart needs: window contents, pending half-pairs and counters. */
export interface SidecarSnapshot {
  version: 1;
  savedAt: number;
  windows: WindowEntry[];
  joiner: JoinerSnapshot;
  /** Linked notes seen and joined samples scored since the first start. */
  notesSeen: number;
  goldSeen: number;
  samplesScored: number;
}

export interface SidecarReport {
  at: number;
  windows: WindowReports;
  join: JoinCounters & { pendingGold: number; pendingPredictions: number };
  notesSeen: number;
  goldSeen: number;
  samplesScored: number;
  alerts: AlertState[];
  /** Gold of learn-stream notes, not scored (0 without a measure split). */
  learnSkipped: number;
  /** The memory version of the latest linked note (null: no memory), next to the measure-stream accuracy. */
  memoryVersion: string | null;
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
  private learnSkipped = 0;
  private memoryVersion: string | null = null;

  constructor(view: OntologyView, options: SidecarOptions, log: (line: string) => void, restored?: SidecarSnapshot, now = Date.now()) {
    this.view = view;
    this.log = log;
    this.joiner = new MentionJoiner(options.joiner, restored?.joiner);
    this.windows = new RollingWindows(options.windows, restored?.windows ?? [], now);
    this.alerts = new AccuracyAlerts(options.alerts);
    this.measure = options.measure;
    this.notesSeen = restored?.notesSeen ?? 0;
    this.goldSeen = restored?.goldSeen ?? 0;
    this.samplesScored = restored?.samplesScored ?? 0;
    this.joiner.expire(now);
    this.judge(now);
  }

  addGold(gold: GoldMention, now: number): void {
    this.goldSeen++;
    if (this.measure && goldStream(gold.noteId, this.measure.learnFraction, this.measure.seed ?? MEMORY_SPLIT_SEED) === 'learn') {
      this.learnSkipped++;
      return;
    }
    const prediction = this.joiner.addGold(gold, now);
    if (prediction) this.score(gold, prediction, now);
  }

  addLinkedNote(note: LinkedNote, now: number): void {
    this.notesSeen++;
    this.memoryVersion = note.memoryVersion ?? null;
    for (const mention of note.mentions) {
      const prediction: Prediction = { noteId: note.noteId, mention };
      const gold = this.joiner.addPrediction(prediction, now);
      if (gold) this.score(gold, prediction, now);
    }
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
      learnSkipped: this.learnSkipped,
      memoryVersion: this.memoryVersion,
    };
  }

  snapshot(now: number): SidecarSnapshot {
    return { version: 1, savedAt: now, windows: this.windows.retained(), joiner: this.joiner.snapshot(), notesSeen: this.notesSeen, goldSeen: this.goldSeen, samplesScored: this.samplesScored };
  }

  private score(gold: GoldMention, prediction: Prediction, now: number): void {
    this.windows.add(scoreRecord(joinMention(gold, prediction.mention, this.view), this.view), now);
    this.samplesScored++;
    this.judge(now);
  }

  private judge(now: number): void {
    const overall = this.windows.overall();
    const changed = [...this.alerts.update('count', overall.count, now), ...this.alerts.update('time', overall.time, now)];
    for (const state of changed) this.log(alertLogLine(state));
  }
}
