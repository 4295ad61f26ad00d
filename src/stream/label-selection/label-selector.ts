import type { LinkedMention, LinkedNote } from '../../link/types.ts';
import { BoundedRecencyMap } from './bounded-recency-map.ts';
import type { LabelProposal } from './label-proposal.ts';
import { goldStream, MEMORY_SPLIT_SEED } from './note-draw.ts';
import { isNeedDriven, priorityOf, uncertaintyOf, type SelectionPolicy } from './selection-policy.ts';

export interface LabelSelectorOptions {
  policy: SelectionPolicy;
  /** Learn-stream labels asked per window. */
  budget: number;
  /** The budget's period (ms, or whatever clock the caller passes to observe/take). */
  windowMs: number;
  /** α of confidence-recurrence: priority = uncertainty × recurrence^α. */
  recurrenceExponent: number;
  /** Share of notes drawn whole into the measure stream (the same draw the memory updater and evaluator use). */
  measureFraction: number;
  /** Measure-stream labels asked per window at most (a note that no longer fits is left out whole). */
  measureBudget: number;
  /** Seed of the learn/measure split (the memory updater's and the evaluator's --split-seed). */
  splitSeed?: number;
  /** Seed of the random policies' draws. */
  drawSeed?: number;
  /** Mentions waiting for a window at most (the lowest priority ones are dropped beyond). */
  maxPool?: number;
  /** Surfaces whose recurrence and asked-state are remembered at most. */
  maxSurfaces?: number;
  /** The key a surface is counted under (the memory's and KB's name normalization). */
  surfaceKey: (text: string) => string;
  /** True when the memory already holds labels for the surface: a need-driven policy does not ask it. */
  inMemory?: (text: string) => boolean;
}

export interface LabelSelectorStats {
  observedNotes: number;
  observedMentions: number;
  /** Requests sent to their stream's topic (confirmed after the produce). */
  proposedLearn: number;
  proposedMeasure: number;
  /** Requests never sent because their stream has no topic (the measure slice without a measure topic): not in proposed*. */
  notSent: number;
  /** Learn candidates skipped: surface already asked, or already in the memory. */
  skippedAsked: number;
  skippedInMemory: number;
  /** Candidates dropped from a full pool, and measure notes left out over the measure budget. */
  poolDropped: number;
  measureDropped: number;
  /** Notes observed again (a redelivered batch) and ignored. */
  repeatedNotes: number;
  /** Proposals that could not be encoded as a LabelRequest and were dropped (the stream goes on). */
  discarded: number;
  pool: number;
}

interface PoolEntry {
  noteId: string;
  mention: LinkedMention;
  surface: string;
  uncertainty: number;
  versions: LabelProposal['versions'];
}

/** A note as the selector needs it: the text of each mention, by mention id (kept in memory only, never emitted). */
export interface ObservedNote {
  noteId: string;
  mentions: readonly { id: string; text: string }[];
}

/**
 * Chooses which linked mentions annotators are asked to label (issue #25), in two streams:
 * - **learn**, by need: candidates wait in a bounded pool; when a window of `windowMs` closes,
 *   the `budget` of highest priority (selection-policy.ts) is proposed, the rest waits for the
 *   next window. Need-driven policies ask each surface once and skip surfaces the memory holds.
 * - **measure**, by chance: every mention of the notes the split draws into the measure stream,
 *   at once, so the evaluator's accuracy on them stays an unbiased estimate.
 * `take` hands proposals out; the caller `confirm`s them once they are produced or `putBack`s
 * them when the produce failed, so a failed transaction loses no proposal and asks nothing twice.
 */
export class LabelSelector {
  readonly options: LabelSelectorOptions;
  readonly stats: LabelSelectorStats = { observedNotes: 0, observedMentions: 0, proposedLearn: 0, proposedMeasure: 0, notSent: 0, skippedAsked: 0, skippedInMemory: 0, poolDropped: 0, measureDropped: 0, repeatedNotes: 0, discarded: 0, pool: 0 };
  private readonly recurrence: BoundedRecencyMap<string, number>;
  private readonly asked: BoundedRecencyMap<string, true>;
  private readonly seenNotes: BoundedRecencyMap<string, true>;
  private readonly pool = new Map<string, PoolEntry>();
  private measureQueue: LabelProposal[] = [];
  /** Taken, not yet confirmed or put back; a learn proposal keeps the pool entry it came from. */
  private readonly outstanding = new Map<LabelProposal, { key: string; entry: PoolEntry } | undefined>();
  private windowStart: number | undefined;
  private measureLeft: number;
  /**
   * Learn labels of this window put back after a failed produce: chosen again at the next take,
   * not a window later, or a failed delivery would leave its window's budget unspent.
   */
  private learnOwed = 0;

  constructor(options: LabelSelectorOptions) {
    if (!(options.budget >= 0) || !(options.windowMs > 0)) throw new RangeError('budget must be ≥ 0 and windowMs > 0');
    if (!(options.measureFraction >= 0 && options.measureFraction <= 1)) throw new RangeError('measureFraction must be within 0..1');
    this.options = options;
    const maxSurfaces = options.maxSurfaces ?? 200_000;
    this.recurrence = new BoundedRecencyMap(maxSurfaces);
    this.asked = new BoundedRecencyMap(maxSurfaces);
    this.seenNotes = new BoundedRecencyMap(maxSurfaces);
    this.measureLeft = options.measureBudget;
  }

  /** Whether a note's gold is for measuring (never learned); the same draw as the memory updater's. */
  isMeasureNote(noteId: string): boolean {
    return this.options.measureFraction > 0 && goldStream(noteId, 1 - this.options.measureFraction, this.options.splitSeed ?? MEMORY_SPLIT_SEED) === 'measure';
  }

  /** Counts a linked note's surfaces and queues its candidates; a note seen before is ignored. */
  observe(note: ObservedNote, linked: LinkedNote, now: number): void {
    if (this.seenNotes.has(note.noteId)) {
      this.stats.repeatedNotes++;
      return;
    }
    this.seenNotes.set(note.noteId, true);
    this.windowStart ??= now;
    this.stats.observedNotes++;
    const texts = new Map(note.mentions.map((m) => [m.id, m.text]));
    const versions = { linkerVersion: linked.linkerVersion, modelVersion: linked.modelVersion, indexVersion: linked.indexVersion, memoryVersion: linked.memoryVersion ?? null };
    const measure = this.isMeasureNote(note.noteId);
    const measured: LabelProposal[] = [];
    for (const mention of linked.mentions) {
      const text = texts.get(mention.mentionId);
      if (text === undefined) continue;
      this.stats.observedMentions++;
      const surface = this.options.surfaceKey(text);
      const recurrence = (this.recurrence.get(surface) ?? 0) + 1;
      this.recurrence.set(surface, recurrence);
      if (measure) {
        measured.push({ stream: 'measure', policy: 'random-note', priority: 0, recurrence, noteId: note.noteId, mention, versions, requestedAt: now });
        continue;
      }
      this.offer({ noteId: note.noteId, mention, surface, uncertainty: uncertaintyOf(mention), versions }, text);
    }
    if (measured.length === 0) return;
    if (measured.length > this.measureLeft) {
      this.stats.measureDropped += measured.length;
      return;
    }
    this.measureLeft -= measured.length;
    this.measureQueue.push(...measured);
  }

  /**
   * The proposals due now: queued measure ones, and the learn stream's choice when the window has
   * closed (or `closeWindow`: a replay's end). They stay outstanding until confirmed or put back.
   */
  take(now: number, options: { closeWindow?: boolean } = {}): LabelProposal[] {
    const out = this.measureQueue;
    this.measureQueue = [];
    for (const p of out) this.outstanding.set(p, undefined);
    const closes = this.windowStart !== undefined && (options.closeWindow || now - this.windowStart >= this.options.windowMs);
    // A closing window brings its own budget; what a failed produce owed the old one is in the pool it chooses from.
    const due = closes ? this.options.budget : this.learnOwed;
    if (due > 0) {
      for (const { proposal, key, entry } of this.chooseLearn(now, due)) {
        this.outstanding.set(proposal, { key, entry });
        out.push(proposal);
      }
    }
    this.learnOwed = 0;
    if (closes) {
      const elapsed = now - this.windowStart!;
      this.windowStart = options.closeWindow && elapsed < this.options.windowMs ? now : now - (elapsed % this.options.windowMs);
      this.measureLeft = this.options.measureBudget;
    }
    return out;
  }

  /** The proposals were produced: they count as asked for good. Returns those still outstanding (not discarded). */
  confirm(proposals: readonly LabelProposal[]): LabelProposal[] {
    const confirmed = proposals.filter((p) => this.outstanding.delete(p));
    for (const p of confirmed) {
      if (p.stream === 'learn') this.stats.proposedLearn++;
      else this.stats.proposedMeasure++;
    }
    return confirmed;
  }

  /** Proposals with no topic to go to: dropped for good, counted as not sent (their notes stay out of learning all the same). */
  dropUnsent(proposals: readonly LabelProposal[]): void {
    for (const p of proposals) if (this.outstanding.delete(p)) this.stats.notSent++;
  }

  /** Proposals that can never be sent (not encodable): dropped for good, counted. */
  discard(proposals: readonly LabelProposal[]): void {
    for (const p of proposals) if (this.outstanding.delete(p)) this.stats.discarded++;
  }

  /** The produce failed: the proposals wait to be taken again (learn ones unasked, back in the pool, their share of the window's budget chosen again at the next take). */
  putBack(proposals: readonly LabelProposal[]): void {
    for (const p of proposals) {
      if (!this.outstanding.has(p)) continue;
      const origin = this.outstanding.get(p);
      this.outstanding.delete(p);
      if (origin === undefined) {
        this.measureQueue.push(p);
        continue;
      }
      if (isNeedDriven(this.options.policy)) this.asked.delete(origin.key);
      this.pool.set(origin.key, origin.entry);
      this.learnOwed++;
    }
    this.stats.pool = this.pool.size;
  }

  private poolKey(noteId: string, mentionId: string, surface: string): string {
    return isNeedDriven(this.options.policy) ? surface : `${noteId}\u0000${mentionId}`;
  }

  private offer(entry: PoolEntry, text: string): void {
    const key = this.poolKey(entry.noteId, entry.mention.mentionId, entry.surface);
    if (isNeedDriven(this.options.policy)) {
      if (this.asked.has(key)) {
        this.stats.skippedAsked++;
        return;
      }
      if (this.options.inMemory?.(text)) {
        this.stats.skippedInMemory++;
        return;
      }
      // One candidate per surface: its least confident occurrence, the one a label settles most.
      const waiting = this.pool.get(key);
      if (waiting !== undefined && waiting.uncertainty >= entry.uncertainty) return;
    }
    this.pool.set(key, entry);
    const max = this.options.maxPool ?? 100_000;
    if (this.pool.size > max) this.shrinkPool(Math.max(1, Math.floor(max * 0.9)));
    this.stats.pool = this.pool.size;
  }

  private prioritized(): { key: string; entry: PoolEntry; priority: number; recurrence: number }[] {
    const { policy, recurrenceExponent } = this.options;
    const seed = this.options.drawSeed ?? 1;
    return [...this.pool].map(([key, entry]) => {
      const recurrence = this.recurrence.get(entry.surface) ?? 1;
      const priority = priorityOf(policy, { noteId: entry.noteId, mentionId: entry.mention.mentionId, uncertainty: entry.uncertainty, recurrence }, { seed, recurrenceExponent });
      return { key, entry, priority, recurrence };
    });
  }

  private shrinkPool(keep: number): void {
    const ranked = this.prioritized().sort((a, b) => b.priority - a.priority);
    for (const dropped of ranked.slice(keep)) this.pool.delete(dropped.key);
    this.stats.poolDropped += Math.max(0, ranked.length - keep);
  }

  private chooseLearn(now: number, count: number): { proposal: LabelProposal; key: string; entry: PoolEntry }[] {
    const ranked = this.prioritized().sort((a, b) => b.priority - a.priority || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const chosen = ranked.slice(0, count);
    const out: { proposal: LabelProposal; key: string; entry: PoolEntry }[] = [];
    for (const { key, entry, priority, recurrence } of chosen) {
      this.pool.delete(key);
      if (isNeedDriven(this.options.policy)) this.asked.set(key, true);
      const proposal: LabelProposal = { stream: 'learn', policy: this.options.policy, priority, recurrence, noteId: entry.noteId, mention: entry.mention, versions: entry.versions, requestedAt: now };
      out.push({ proposal, key, entry });
    }
    this.stats.pool = this.pool.size;
    return out;
  }
}
