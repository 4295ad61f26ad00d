import type { LinkedMention } from '../../link/types.ts';
import { mentionKey, type GoldMention } from '../gold.ts';

/** A linked mention as the joiner holds it: the mention plus the note it came from. */
export interface Prediction {
  noteId: string;
  mention: LinkedMention;
  /** The memory version of the linked note (null: none; absent in snapshots written before it was kept). */
  memoryVersion?: string | null;
  /**
   * The stage cut this mention's candidate list to fit its output topic: the ranking is not the
   * linker's, so the pair is counted as `candidatesCut`, never scored (absent: not cut).
   */
  cut?: boolean;
}

export interface JoinerLimits {
  /** A half-pair waits at most this long for its other half. */
  ttlMs: number;
  /** Pending half-pairs (gold and predictions together) kept at most; the oldest goes first. */
  maxPending: number;
}

/** Evictions and other outcomes, by cause: what operators read to size TTL and maxPending. */
export interface JoinCounters {
  joined: number;
  goldExpired: number;
  predictionsExpired: number;
  goldEvicted: number;
  predictionsEvicted: number;
  /** A second gold (or prediction) for a mention still pending: the newer one replaces it. */
  goldReplaced: number;
  predictionsReplaced: number;
  /** Pairs whose prediction's candidate list the stage had cut: joined, not scored (not in `joined`). */
  candidatesCut: number;
}

interface Pending<T> {
  value: T;
  at: number;
}

export interface JoinerSnapshot {
  gold: { value: GoldMention; at: number }[];
  predictions: { value: Prediction; at: number }[];
  counters: JoinCounters;
}

export function emptyJoinCounters(): JoinCounters {
  return { joined: 0, goldExpired: 0, predictionsExpired: 0, goldEvicted: 0, predictionsEvicted: 0, goldReplaced: 0, predictionsReplaced: 0, candidatesCut: 0 };
}

/**
 * Joins gold labels with predictions by (note id, mention id), whichever arrives first. State is
 * bounded twice over: by age (TTL) and by count (maxPending, oldest evicted first); every
 * expiry and eviction is counted. Time is passed in, never read, so tests and replays are exact.
 */
export class MentionJoiner {
  private readonly limits: JoinerLimits;
  // Maps keep insertion order; a replaced entry is deleted and re-set, so order stays by arrival.
  private readonly gold = new Map<string, Pending<GoldMention>>();
  private readonly predictions = new Map<string, Pending<Prediction>>();
  readonly counters: JoinCounters;

  /**
   * `downtimeMs`: time since the snapshot was taken. Restored half-pairs are made that much younger,
   * so the TTL counts only time the evaluator ran: the other half may be in the backlog it has yet
   * to read, and a long stop must not expire them all before it gets there.
   */
  constructor(limits: JoinerLimits, snapshot?: JoinerSnapshot, downtimeMs = 0) {
    if (!(limits.ttlMs > 0) || !(limits.maxPending >= 1)) throw new RangeError('joiner TTL and maxPending must be positive');
    this.limits = limits;
    this.counters = snapshot ? { ...emptyJoinCounters(), ...snapshot.counters } : emptyJoinCounters();
    // One shift for all keeps the maps in age order, which expiry and eviction rely on.
    const shift = Math.max(0, downtimeMs);
    for (const p of snapshot?.gold ?? []) this.gold.set(mentionKey(p.value.noteId, p.value.mentionId), { value: p.value, at: p.at + shift });
    for (const p of snapshot?.predictions ?? []) this.predictions.set(mentionKey(p.value.noteId, p.value.mention.mentionId), { value: p.value, at: p.at + shift });
  }

  get pendingGold(): number {
    return this.gold.size;
  }

  get pendingPredictions(): number {
    return this.predictions.size;
  }

  /** Returns the prediction it completes, or undefined when it waits. */
  addGold(gold: GoldMention, now: number): Prediction | undefined {
    this.expire(now);
    const key = mentionKey(gold.noteId, gold.mentionId);
    const waiting = this.predictions.get(key);
    if (waiting && sameSpan(gold, waiting.value)) {
      this.predictions.delete(key);
      this.countJoin(waiting.value);
      return waiting.value;
    }
    if (this.gold.delete(key)) this.counters.goldReplaced++;
    this.gold.set(key, { value: gold, at: now });
    this.enforceSize();
    return undefined;
  }

  /** Returns the gold it completes, or undefined when it waits. */
  addPrediction(prediction: Prediction, now: number): GoldMention | undefined {
    this.expire(now);
    const key = mentionKey(prediction.noteId, prediction.mention.mentionId);
    const waiting = this.gold.get(key);
    if (waiting && sameSpan(waiting.value, prediction)) {
      this.gold.delete(key);
      this.countJoin(prediction);
      return waiting.value;
    }
    if (this.predictions.delete(key)) this.counters.predictionsReplaced++;
    this.predictions.set(key, { value: prediction, at: now });
    this.enforceSize();
    return undefined;
  }

  /** Drops half-pairs older than the TTL. */
  expire(now: number): void {
    const cutoff = now - this.limits.ttlMs;
    this.counters.goldExpired += dropOlder(this.gold, cutoff);
    this.counters.predictionsExpired += dropOlder(this.predictions, cutoff);
  }

  snapshot(): JoinerSnapshot {
    return { gold: [...this.gold.values()], predictions: [...this.predictions.values()], counters: { ...this.counters } };
  }

  private countJoin(prediction: Prediction): void {
    if (prediction.cut === true) this.counters.candidatesCut++;
    else this.counters.joined++;
  }

  private enforceSize(): void {
    while (this.gold.size + this.predictions.size > this.limits.maxPending) {
      const g = this.gold.values().next().value;
      const p = this.predictions.values().next().value;
      // Evict whichever half-pair is oldest; on a tie, the prediction (gold is the scarcer side).
      if (g !== undefined && (p === undefined || g.at < p.at)) {
        this.gold.delete(this.gold.keys().next().value!);
        this.counters.goldEvicted++;
      } else {
        this.predictions.delete(this.predictions.keys().next().value!);
        this.counters.predictionsEvicted++;
      }
    }
  }
}

/** Entries are in arrival order, so expiry stops at the first one young enough. */
function dropOlder<T>(map: Map<string, Pending<T>>, cutoff: number): number {
  let dropped = 0;
  for (const [key, entry] of map) {
    if (entry.at >= cutoff) break;
    map.delete(key);
    dropped++;
  }
  return dropped;
}

/**
 * A note sent again in another version may reuse a mention id for another span: the pair is the
 * gold's only when the prediction covers the span the label was given on; otherwise each waits.
 */
function sameSpan(gold: GoldMention, prediction: Prediction): boolean {
  return gold.start === prediction.mention.start && gold.end === prediction.mention.end;
}
