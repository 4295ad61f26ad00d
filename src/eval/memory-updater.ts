import type { KafkaClient, KafkaConsumerClient } from '../stream/kafka/client-types.ts';
import { CuilinkError } from '../kb/errors.ts';
import type { MemoryLearner, LabelledMention } from '../link/memory-learner.ts';
import { publishMemory } from '../link/memory-learner.ts';
import type { MemoryStore } from '../retrieve/memory-store.ts';
import { currentMemoryVersion } from '../retrieve/memory-root.ts';
import { noteEventToNoteInput } from '../stream/avro/avro-conversions.ts';
import type { RecordCodec } from '../stream/avro/record-codec.ts';
import { avroToGoldMention } from './gold-avro.ts';
import type { GoldMention } from './gold.ts';
import { goldStream, MEMORY_SPLIT_SEED } from './gold-sampling.ts';

export interface MemoryUpdaterOptions {
  kafka: KafkaClient;
  codec: RecordCodec;
  /** The NoteEvent topic the gold refers to: the gold topic carries spans, the note carries the text. */
  notesTopic: string;
  goldTopic: string;
  groupId: string;
  /** Memory root; each flush writes a new version there and flips CURRENT. */
  root: string;
  learner: MemoryLearner;
  /** false: a new memory keeps no raw text (keyed hashes only); an existing memory keeps its mode, and one with raw text is refused. */
  rawText?: boolean;
  /** Share of notes whose gold the memory learns; the rest is the evaluator's measure stream. */
  learnFraction: number;
  splitSeed?: number;
  /** A new snapshot at most this often (ms) while labels arrive. */
  flushMs?: number;
  /** Notes kept to resolve gold that arrives later (oldest dropped first); gold waits for this many notes at most. */
  maxNotes?: number;
  log: (line: string) => void;
  /** The clock that spaces the dropped-gold warnings and dates snapshots (default Date.now). */
  now?: () => number;
}

export interface MemoryUpdaterStats {
  learned: number;
  measureSkipped: number;
  duplicates: number;
  waiting: number;
  /** Gold that came before its note while the gold of `maxNotes` notes already waited: not learned (a restart reads it again). */
  goldDropped: number;
  /** Gold of notes whose labels were erased (cuilink memory erase): never learned again. */
  erasedSkipped: number;
  /** NIL gold (no concept id: the mention is not in the KB), which names nothing the memory could vote for. */
  nilSkipped: number;
  snapshots: number;
  /** Snapshots that could not be published: refused because another writer published meanwhile (retried), or failed (fatal). */
  snapshotsFailed: number;
  /** Labels joined with their note and not yet in a published snapshot. */
  pending: number;
  /** When this process last published a snapshot (ms since the epoch), or started when it has none yet. */
  lastSnapshotAt: number;
  version: string | undefined;
}

/** Snapshot attempts failing in a row that make the updater unhealthy (it cannot publish what it learns). */
export const FAILED_SNAPSHOTS_UNHEALTHY = 3;

const DEFAULT_MAX_NOTES = 50_000;
/** Dropped gold is logged at most this often: a backlog of early gold must not flood the log. */
const DROPPED_GOLD_WARN_EVERY_MS = 60_000;

interface NoteText {
  text: string;
  mentions: Map<string, { start: number; end: number; text: string; label: string }>;
}

/**
 * The online learner: consumes the notes and gold topics, joins each gold label of a `learn`-stream
 * note with its mention text, encodes it and, at most every `flushMs`, publishes a new memory
 * version (written completely, then CURRENT renamed over: linkers polling the root swap to it
 * between batches). No offsets are committed: on restart it reads both topics from the beginning
 * and skips labels already in the memory (same note id, mention id and ids), so the memory on
 * disk is the only state and a crash loses nothing but the unflushed interval.
 */
export class MemoryUpdater {
  private readonly options: MemoryUpdaterOptions;
  private readonly consumer: KafkaConsumerClient;
  /**
   * Next offset to handle per "topic\0partition": a consumer that restarts after a failed record
   * reads again from the committed offsets (none here: the beginning), and what was handled
   * already is not counted twice.
   */
  private readonly handled = new Map<string, bigint>();
  private store: MemoryStore;
  private readonly known = new Set<string>();
  private readonly notes = new Map<string, NoteText>();
  private readonly waiting = new Map<string, GoldMention[]>();
  private pending: LabelledMention[] = [];
  private timer: NodeJS.Timeout | undefined;
  private lastDropWarnAt = Number.NEGATIVE_INFINITY;
  private droppedWarned = 0;
  private flushing: Promise<void> = Promise.resolve();
  private rejectFailed: (error: Error) => void = () => {};
  private fatal: Error | undefined;
  private started = false;
  private joined = false;
  private failedInARow = 0;
  /**
   * Rejects when a snapshot could not be learned or written (an internal fault): the process should
   * exit non-zero and be restarted; it replays the topics and skips what the memory on disk holds.
   */
  readonly failed: Promise<never> = new Promise<never>((_, reject) => {
    this.rejectFailed = reject;
  });
  readonly stats: MemoryUpdaterStats = { learned: 0, measureSkipped: 0, duplicates: 0, waiting: 0, goldDropped: 0, erasedSkipped: 0, nilSkipped: 0, snapshots: 0, snapshotsFailed: 0, pending: 0, lastSnapshotAt: 0, version: undefined };

  constructor(options: MemoryUpdaterOptions) {
    this.options = options;
    this.consumer = options.kafka.consumer({ groupId: options.groupId });
    this.store = options.learner.openOrCreate(options.root, { rawText: options.rawText });
    this.stats.version = this.store.version;
    this.stats.lastSnapshotAt = this.now();
    this.knowStoredLabels();
  }

  /** Live (/healthz): started, no fatal error, and snapshots are not failing again and again. */
  get live(): boolean {
    return this.started && this.fatal === undefined && this.failedInARow < FAILED_SNAPSHOTS_UNHEALTHY;
  }

  /** Ready (/readyz): live and the consumer has joined its group. */
  get ready(): boolean {
    return this.live && this.joined;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private fail(error: Error): void {
    if (this.fatal !== undefined) return;
    this.fatal = error;
    if (this.timer) clearInterval(this.timer);
    this.rejectFailed(error);
  }

  /** By note key (a memory without raw text holds note ids only as keyed hashes; onGold keys the same way). */
  private knowStoredLabels(): void {
    for (const r of this.store.list()) {
      const note = this.store.recordNoteKey(r);
      if (note !== null && r.mentionId !== null) this.known.add(labelKey(note, r.mentionId, r.ids));
    }
  }

  async start(): Promise<void> {
    const { notesTopic, goldTopic, codec, log } = this.options;
    this.failed.catch(() => {}); // observed by whoever awaits it; never an unhandled rejection
    this.consumer.onJoin(() => {
      this.joined = true;
    });
    // A consumer that gave up reads nothing more: without this the updater would idle, healthy-looking, forever.
    this.consumer.onCrash((error, restarting) => {
      if (!restarting) this.fail(new CuilinkError('CONSUMER_FAILED', 'the consumer gave up: no gold is read any more', { cause: error }));
    });
    await this.consumer.run({
      topics: [notesTopic, goldTopic],
      fromBeginning: true,
      eachBatch: async (batch) => {
        const { topic, partition } = batch;
        const key = `${topic}\u0000${partition}`;
        for (const message of batch.messages) {
          // Records of a stale batch come again (to whoever holds the partition then).
          if (batch.isStale()) return;
          const offset = BigInt(message.offset);
          if (offset < (this.handled.get(key) ?? 0n)) continue;
          try {
            if (topic === goldTopic) this.onGold(checkGold(avroToGoldMention(await codec.decode('GoldMention', message.value, message.headers))));
            else this.onNote(noteEventToNoteInput(await codec.decode('NoteEvent', message.value, message.headers)));
          } catch (error) {
            // Retriable (registry down): thrown, and the consumer reads this record again.
            if (!(error instanceof CuilinkError) || error.retriable) throw error;
            log(`memory-updater: skipped ${topic}[${partition}]@${message.offset}: ${error.code}`);
          }
          this.handled.set(key, offset + 1n);
        }
      },
    });
    this.started = true;
    this.timer = setInterval(() => {
      this.flush().catch((error: unknown) => this.fail(error as Error));
    }, this.options.flushMs ?? 2000);
  }

  /** Learns what is pending now and publishes a snapshot; resolves once it is current. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      // After a failure nothing more is learned: the store may hold half a batch; a restart rebuilds from disk.
      if (this.pending.length === 0) return;
      // Another writer published beside us (cuilink memory add, remove or erase): learn on top of
      // its version, which holds everything we published (it could only be made current over
      // ours), so its labels, removals and erasures are kept and never published over.
      const current = currentMemoryVersion(this.options.root);
      if (current !== undefined && current !== this.store.version) {
        this.store = this.options.learner.openOrCreate(this.options.root, { rawText: this.options.rawText });
        this.knowStoredLabels();
        this.options.log(`memory-updater: ${current} was published beside us; learning on top of it (${this.store.size} records)`);
      }
      const batch = this.pending.filter((p) => p.record.noteId == null || !this.store.isErased(p.record.noteId));
      this.pending = [];
      this.stats.pending = 0;
      if (batch.length === 0) return;
      try {
        await this.options.learner.add(this.store, batch);
        this.stats.version = publishMemory(this.store, this.options.root);
      } catch (error) {
        this.stats.snapshotsFailed++;
        this.failedInARow++;
        // Still pending (a restart reads them again): the gauge must not say the memory caught up.
        this.stats.pending += batch.length;
        if (!(error instanceof CuilinkError) || error.code !== 'MEMORY_CHANGED') throw error;
        // Published beside us meanwhile: the batch is learned again on top of that version next time.
        this.pending.unshift(...batch);
        return;
      }
      this.failedInARow = 0;
      this.stats.lastSnapshotAt = this.now();
      this.stats.learned += batch.length;
      this.stats.snapshots++;
      this.options.log(`memory-updater: +${batch.length} labels → ${this.stats.version} (${this.store.size} records)`);
    });
    return this.flushing;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.consumer.close();
    await this.flush();
    // Drops since the last warning would otherwise go unreported.
    if (this.stats.goldDropped > this.droppedWarned) this.warnDropped();
  }

  private onNote(note: ReturnType<typeof noteEventToNoteInput>): void {
    const max = this.options.maxNotes ?? DEFAULT_MAX_NOTES;
    this.notes.delete(note.noteId);
    this.notes.set(note.noteId, { text: note.text, mentions: new Map(note.mentions.map((m) => [m.id, m])) });
    while (this.notes.size > max) this.notes.delete(this.notes.keys().next().value!);
    const waiting = this.waiting.get(note.noteId);
    if (waiting) {
      this.waiting.delete(note.noteId);
      this.stats.waiting -= waiting.length;
      for (const g of waiting) this.onGold(g);
    }
  }

  private onGold(gold: GoldMention): void {
    if (goldStream(gold.noteId, this.options.learnFraction, this.options.splitSeed ?? MEMORY_SPLIT_SEED) === 'measure') {
      this.stats.measureSkipped++;
      return;
    }
    if (this.store.isErased(gold.noteId)) {
      this.stats.erasedSkipped++;
      return;
    }
    // A memory label names a concept; learned, a NIL one would fail the whole batch at the flush.
    if (gold.ids.length === 0) {
      this.stats.nilSkipped++;
      return;
    }
    const key = labelKey(this.store.noteKey(gold.noteId), gold.mentionId, gold.ids);
    if (this.known.has(key)) {
      this.stats.duplicates++;
      return;
    }
    const note = this.notes.get(gold.noteId);
    const mention = note?.mentions.get(gold.mentionId);
    // Gold ahead of its note, or for another version of it (a note sent again with its mention ids
    // reassigned: the id now names another span; or longer than this one): held (bounded like the
    // notes) until the version the label was given on arrives, never learned for whatever mention
    // holds the id now, nor for a span cut short at the note's end.
    if (!note || (mention !== undefined ? mention.start !== gold.start || mention.end !== gold.end : gold.end > note.text.length)) {
      const list = this.waiting.get(gold.noteId) ?? [];
      if (list.length === 0 && this.waiting.size >= (this.options.maxNotes ?? DEFAULT_MAX_NOTES)) {
        this.dropGold();
        return;
      }
      list.push(gold);
      this.waiting.set(gold.noteId, list);
      this.stats.waiting++;
      return;
    }
    const text = mention?.text ?? note.text.slice(gold.start, gold.end);
    if (text.trim() === '') return;
    this.known.add(key);
    this.stats.pending++;
    this.pending.push({
      record: { text, label: gold.label, ids: gold.ids, source: `gold-topic:${this.options.goldTopic}`, time: Date.now(), noteId: gold.noteId, mentionId: gold.mentionId },
      note: { text: note.text, start: gold.start, end: gold.end },
    });
  }

  /** Counts a label that found no room to wait. */
  private dropGold(): void {
    this.stats.goldDropped++;
    const now = this.now();
    if (now - this.lastDropWarnAt < DROPPED_GOLD_WARN_EVERY_MS) return;
    this.lastDropWarnAt = now;
    this.warnDropped();
  }

  /** How many labels were dropped so far: counts only (gold and its note are PHI). */
  private warnDropped(): void {
    const n = this.stats.goldDropped;
    this.droppedWarned = n;
    const max = this.options.maxNotes ?? DEFAULT_MAX_NOTES;
    this.options.log(`memory-updater: ${n} gold label${n === 1 ? '' : 's'} dropped so far, not learned: ahead of ${n === 1 ? 'its note' : 'their notes'} while gold already waited for ${max} note${max === 1 ? '' : 's'}, the most held (a restart reads the topics again)`);
  }
}

/**
 * What makes a gold label the record's fault, skipped with a log line: an empty or blank concept id
 * (BAD_MENTION: the memory refuses it at the flush, failing the whole batch, and a blank one it took
 * would be linked as a concept id outside the KB, memory.outsideKb), and a span no note has
 * (BAD_SPAN: negative, empty or reversed; learned, a slice of the note's text nobody labelled).
 */
function checkGold(gold: GoldMention): GoldMention {
  if (gold.ids.some((id) => id.trim() === '')) throw new CuilinkError('BAD_MENTION', `a gold label with ${gold.ids.length === 1 ? 'an empty concept id' : 'an empty one among its concept ids'}`);
  if (!(gold.start >= 0 && gold.end > gold.start)) throw new CuilinkError('BAD_SPAN', `a gold label with the span [${gold.start}, ${gold.end}): negative, empty or reversed`);
  return gold;
}

function labelKey(noteId: string, mentionId: string, ids: readonly string[]): string {
  return `${noteId}\u0000${mentionId}\u0000${[...ids].sort().join('|')}`;
}
