import { isDateTime } from '../kb/epoch-time.ts';
import type { DeadLetterRecord } from './avro/avro-records.ts';
import type { InboundRecord, OutboundRecord } from './kafka/client-types.ts';

/**
 * What `cuilink dlq replay --execute` remembers (docs/dead-letters.md, "The replay ledger"): a
 * compacted topic with one record per dead letter it sent, keyed `<dead-letter topic>/<partition>/<offset>`,
 * produced in the same Kafka transaction as the replayed record, so that a replay stopped part way
 * leaves both or neither and the next one skips exactly what was sent. Pure: the command
 * (src/cli/commands/dlq-replay.ts) reads and writes the topic.
 */

/** The ledger's name when `--ledger` is not given: the dead-letter topic's, plus this. */
export const LEDGER_SUFFIX = '.replayed';

export function defaultLedgerTopic(deadLetterTopic: string): string {
  return `${deadLetterTopic}${LEDGER_SUFFIX}`;
}

/**
 * One transactional id per ledger, the same for every replay that writes it: a replay's producer
 * registering it fences the one that held it (its open transaction aborted, its next write
 * refused), so two replays at once cannot both send, and the later reads the ledger only once the
 * earlier's last transaction is settled. Unlike the stage's `<groupId>-<clientId>` it names no
 * instance on purpose. Never the stage's: that one's prefix is its group id.
 */
export function replayTransactionalId(ledgerTopic: string): string {
  return `cuilink-dlq-replay.${ledgerTopic}`;
}

/** A dead letter's place on its topic; also the replayed record's `cuilink-replayed-from` header. */
export function ledgerKey(position: { topic: string; partition: number; offset: string }): string {
  return `${position.topic}/${position.partition}/${position.offset}`;
}

/** A ledger record's value (JSON): where the dead letter went and when, and which dead letter it was. */
export interface LedgerEntry {
  /** The topic it was sent to. */
  to: string;
  /** When (epoch ms). */
  replayedAt: number;
  /** The dead letter's source record, `<topic>/<partition>/<offset>`, and failedAt: with the key, they tell it from another dead letter later written at the same place (a dead-letter topic deleted and made again). */
  source: string;
  failedAt: number;
  errorCode: string;
}

function sourceOf(letter: DeadLetterRecord): string {
  return `${letter.sourceTopic}/${letter.partition}/${letter.offset}`;
}

/** The ledger record for a dead letter sent to `to` at `replayedAt`. No note text: positions, times and a code. */
export function ledgerRecord(position: { topic: string; partition: number; offset: string }, letter: DeadLetterRecord, to: string, replayedAt: number): OutboundRecord {
  const entry: LedgerEntry = { to, replayedAt, source: sourceOf(letter), failedAt: letter.failedAt, errorCode: letter.errorCode };
  return { key: ledgerKey(position), value: JSON.stringify(entry) };
}

/** A value this version cannot read (a newer version's, one written by hand): taken as sent, since sending again may duplicate and --again forces it. */
export type UnreadableEntry = { unreadable: string };

function parseEntry(value: Buffer): LedgerEntry | UnreadableEntry {
  try {
    const parsed = JSON.parse(value.toString('utf8')) as Partial<LedgerEntry> | null;
    const ok = parsed !== null && typeof parsed === 'object' && typeof parsed.to === 'string' && isDateTime(parsed.replayedAt) && typeof parsed.source === 'string' && Number.isFinite(parsed.failedAt);
    return ok ? (parsed as LedgerEntry) : { unreadable: 'not a ledger entry' };
  } catch (error) {
    return { unreadable: `not JSON (${(error as Error).message})` };
  }
}

/**
 * The ledger as read: the latest record per key, in offset order (what compaction keeps). A null
 * value (a tombstone) forgets the key: the dead letter may be replayed again.
 */
export class ReplayLedger {
  private readonly entries = new Map<string, LedgerEntry | UnreadableEntry>();

  constructor(readonly topic: string) {}

  /** Records must come in offset order per partition (a key always goes to one partition). */
  add(record: Pick<InboundRecord, 'key' | 'value'>): void {
    if (record.key === null) return;
    const key = record.key.toString('utf8');
    if (record.value === null) this.entries.delete(key);
    else this.entries.set(key, parseEntry(record.value));
  }

  get size(): number {
    return this.entries.size;
  }

  /** How this dead letter was replayed before, or undefined: an entry for another dead letter at the same place does not count. */
  replayOf(position: { topic: string; partition: number; offset: string }, letter: DeadLetterRecord): LedgerEntry | UnreadableEntry | undefined {
    const entry = this.entries.get(ledgerKey(position));
    if (entry === undefined || 'unreadable' in entry) return entry;
    return entry.source === sourceOf(letter) && entry.failedAt === letter.failedAt ? entry : undefined;
  }
}

/** The skip line's detail for a dead letter the ledger holds. */
export function alreadyReplayedDetail(entry: LedgerEntry | UnreadableEntry, ledgerTopic: string): string {
  if ('unreadable' in entry) return `the ledger ${ledgerTopic} has an entry for it this version cannot read (${entry.unreadable}): taken as sent; --again sends it again`;
  return `already replayed to ${entry.to} at ${new Date(entry.replayedAt).toISOString()} (ledger ${ledgerTopic}); --again sends it again`;
}
