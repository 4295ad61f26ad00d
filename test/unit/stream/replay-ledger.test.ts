import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { DeadLetterRecord } from '../../../src/stream/avro/avro-records.ts';
import { replayVerdict, type DeadLetterEntry } from '../../../src/stream/dead-letter-replay.ts';
import { defaultLedgerTopic, ledgerKey, ledgerRecord, ReplayLedger, replayTransactionalId } from '../../../src/stream/replay-ledger.ts';
import { replayLedgerTopic, topicConfigs } from '../../../src/stream/topic-plan.ts';
import { selectForReplay } from '../../../src/cli/commands/dlq-replay.ts';

const ORIGINAL = Buffer.from('Patient reports seizures.');

function letter(overrides: Partial<DeadLetterRecord> = {}): DeadLetterRecord {
  return {
    originalKey: Buffer.from('note-1'),
    original: ORIGINAL,
    originalHeaders: [],
    errorCode: 'NOTE_TOO_LARGE',
    reason: 'too large',
    sourceTopic: 'notes',
    partition: 2,
    offset: 40,
    stage: 'validate',
    failedAt: Date.parse('2025-03-01T10:00:00Z'),
    originalTruncated: false,
    originalSha256: createHash('sha256').update(ORIGINAL).digest('hex'),
    originalSize: ORIGINAL.length,
    ...overrides,
  };
}

const entry = (offset: number, l: DeadLetterRecord = letter({ offset: 40 + offset })): DeadLetterEntry => ({ topic: 'dead', partition: 0, offset: String(offset), letter: l });

/** The ledger as the command reads it: the records' keys and values as bytes. */
function read(records: { key: string | null; value: string | null }[]): ReplayLedger {
  const ledger = new ReplayLedger('dead.replayed');
  for (const r of records) ledger.add({ key: r.key === null ? null : Buffer.from(r.key), value: r.value === null ? null : Buffer.from(r.value) });
  return ledger;
}

function written(e: DeadLetterEntry, to = 'notes', at = Date.parse('2025-03-02T08:00:00Z')): { key: string; value: string } {
  const record = ledgerRecord(e, e.letter!, to, at);
  return { key: String(record.key), value: String(record.value) };
}

test('names: the ledger derives from the dead-letter topic; one transactional id per ledger, not per run or host', () => {
  assert.equal(defaultLedgerTopic('cuilink.dead-letter'), 'cuilink.dead-letter.replayed');
  assert.equal(ledgerKey({ topic: 'cuilink.dead-letter', partition: 3, offset: '120' }), 'cuilink.dead-letter/3/120');
  assert.equal(replayTransactionalId('a.replayed'), replayTransactionalId('a.replayed'), 'two replays of one ledger fence each other');
  assert.notEqual(replayTransactionalId('a.replayed'), replayTransactionalId('b.replayed'));
});

test('a ledger record: keyed by the dead letter\'s place, no note text, read back as the same dead letter', () => {
  const e = entry(7);
  const record = written(e);
  assert.equal(record.key, 'dead/0/7');
  assert.deepEqual(JSON.parse(record.value), { to: 'notes', replayedAt: Date.parse('2025-03-02T08:00:00Z'), source: 'notes/2/47', failedAt: e.letter!.failedAt, errorCode: 'NOTE_TOO_LARGE' });
  assert.doesNotMatch(record.value, /seizures/);
  const ledger = read([record]);
  assert.equal(ledger.size, 1);
  assert.deepEqual(ledger.replayOf(e, e.letter!), JSON.parse(record.value));
  assert.equal(ledger.replayOf(entry(8), entry(8).letter!), undefined, 'another place');
});

test('reading: the latest record per key counts, a tombstone forgets, a key-less record is ignored', () => {
  const e = entry(1);
  const first = written(e, 'notes', 1000);
  const second = written(e, 'notes', 2000);
  assert.equal((read([first, second]).replayOf(e, e.letter!) as { replayedAt: number }).replayedAt, 2000);
  assert.equal(read([first, { key: first.key, value: null }]).replayOf(e, e.letter!), undefined, 'a tombstone: replayable again');
  assert.equal(read([first, { key: first.key, value: null }, second]).size, 1);
  assert.equal(read([{ key: null, value: second.value }]).size, 0);
});

test('an entry for another dead letter at the same place (the dead-letter topic made again) does not count; an unreadable one counts as sent', () => {
  const e = entry(3);
  const ledger = read([written(e)]);
  const sameOffsetOtherLetter = letter({ offset: 999 });
  assert.equal(ledger.replayOf(e, sameOffsetOtherLetter), undefined, 'another source record');
  assert.equal(ledger.replayOf(e, letter({ offset: 43, failedAt: e.letter!.failedAt + 1 })), undefined, 'failed at another time');
  for (const value of ['not json', '{"to":"notes"}', 'null', '42']) {
    const got = read([{ key: 'dead/0/3', value }]).replayOf(e, e.letter!);
    assert.ok(got !== undefined && 'unreadable' in got, value);
  }
});

test('verdicts with the ledger: a replayable dead letter it holds is already-replayed; a hopeless one keeps its reason; without it (--again) it is replayable', () => {
  const sent = entry(0);
  const hopeless = entry(1, letter({ offset: 41, errorCode: 'EMPTY_NOTE' }));
  const ledger = read([written(sent), written(hopeless)]);
  const verdict = replayVerdict(sent, ledger);
  assert.equal(verdict.replayable ? 'yes' : verdict.skip, 'already-replayed');
  assert.match(verdict.replayable ? '' : verdict.detail, /^already replayed to notes at 2025-03-02T08:00:00\.000Z \(ledger dead\.replayed\); --again sends it again$/);
  const never = replayVerdict(hopeless, ledger);
  assert.equal(never.replayable ? 'yes' : never.skip, 'never');
  assert.deepEqual(replayVerdict(sent), { replayable: true });
  assert.deepEqual(replayVerdict(entry(2), ledger), { replayable: true });
});

test('--limit counts the dead letters not yet replayed: a run repeated with --limit N goes on with the next N', () => {
  const entries = [0, 1, 2, 3, 4].map((o) => entry(o));
  const ledger = read([written(entries[0]!), written(entries[1]!)]);
  const positions = (selected: DeadLetterEntry[]) => selected.map((e) => e.offset);
  assert.deepEqual(positions(selectForReplay(entries, {}, 2, ledger)), ['0', '1', '2', '3']);
  assert.deepEqual(positions(selectForReplay(entries, {}, 2, undefined)), ['0', '1'], '--again: the first two');
  assert.deepEqual(positions(selectForReplay(entries, {}, Infinity, ledger)), ['0', '1', '2', '3', '4']);
});

test('the ledger topic is made compacted, one partition, replicated as asked', () => {
  const planned = replayLedgerTopic('dead.replayed', 3);
  assert.deepEqual([planned.partitions, planned.replicationFactor, planned.role], [1, 3, 'replayLedger']);
  assert.equal(topicConfigs(planned)['cleanup.policy'], 'compact');
});
