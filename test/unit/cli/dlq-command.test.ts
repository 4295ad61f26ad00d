import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dlqInspect, parseTime, showsFirstBytes } from '../../../src/cli/commands/dlq.ts';
import { replayStopped, sendInTransactions } from '../../../src/cli/commands/dlq-replay.ts';
import { replayMessage, type DeadLetterEntry } from '../../../src/stream/dead-letter-replay.ts';
import { ReplayLedger } from '../../../src/stream/replay-ledger.ts';
import type { KafkaProducerClient, TopicRecords } from '../../../src/stream/kafka/client-types.ts';
import { capture } from '../../support/capture-console.ts';
import { loadStageConfig } from '../../../src/stream/stage-config.ts';
import { brokerFailureLine, isBrokerFailure } from '../../../src/cli/broker-failure.ts';
import { CuilinkError } from '../../../src/kb/errors.ts';

test('dlq --since/--until: a date the calendar lacks is refused, not rolled over into the next month', () => {
  for (const value of ['2025-02-30', '2025-02-29', '2025-04-31', '2025-02-30T00:00:00Z', '2024-02-30T12:00:00+01:00', '2025-06-31T08:00Z']) {
    assert.throws(() => parseTime(value, 'since'), (e: Error & { code?: string }) => e.code === 'BAD_FLAGS' && e.message.startsWith(`--since '${value}': no such date`), value);
  }
  assert.equal(parseTime('2024-02-29', 'until'), Date.parse('2024-02-29T00:00:00Z'));
  assert.equal(parseTime('2025-12-31T23:59:59.5-05:00', 'until'), Date.parse('2026-01-01T04:59:59.5Z'));
  assert.equal(parseTime('0099-01-31', 'since'), Date.parse('0099-01-31T00:00:00Z'));
});

test('dlq replay: a send that fails for a broker reason stays a broker failure (exit 3), its message kept', () => {
  const cause = new CuilinkError('KAFKA_NETWORK', 'produce to cuilink.notes: Connection closed', { retriable: true });
  const stopped = replayStopped(cause, 'replay stopped: 0 of 3 sent for sure, the next 3 may be in part: produce to cuilink.notes: Connection closed');
  assert.ok(isBrokerFailure(stopped));
  assert.equal(stopped.code, 'KAFKA_NETWORK');
  assert.equal(stopped.cause, cause);
  assert.match(brokerFailureLine(stopped), /replay stopped: 0 of 3 sent for sure, the next 3 may be in part: produce to cuilink\.notes: Connection closed$/);
  const other = replayStopped(new Error('boom'), 'replay stopped: boom');
  assert.equal(other.code, 'REPLAY_FAILED');
  assert.ok(!isBrokerFailure(other));
});

test('dlq inspect shows the originals\' first bytes (note text when a record has no framing) only under the PHI switch: --show-text or telemetry.logPhi', () => {
  assert.equal(showsFirstBytes(false, loadStageConfig({ env: {} })), false);
  assert.equal(showsFirstBytes(true, loadStageConfig({ env: {} })), true);
  assert.equal(showsFirstBytes(false, loadStageConfig({ env: { CUILINK_LOG_PHI: 'true' } })), true);
  assert.match(dlqInspect.usage, /first=hidden/);
  assert.doesNotMatch(dlqInspect.summary, /first bytes/);
});

test('dlq replay --execute: each chunk\'s records and their ledger entries go in one transaction; fenced by a later replay, it stops saying how far it got', async () => {
  const sends = Array.from({ length: 201 }, (_, i) => {
    const entry: DeadLetterEntry = { topic: 'dead', partition: 0, offset: String(i), letter: { originalKey: Buffer.from(`note-${i}`), original: Buffer.from('x'), originalHeaders: [], errorCode: 'NOTE_TOO_LARGE', reason: 'r', sourceTopic: 'notes', partition: 0, offset: i, stage: 'decode', failedAt: 0, originalTruncated: false, originalSha256: null, originalSize: null } };
    return { entry, message: replayMessage(entry) };
  });
  const transactions: { sent: TopicRecords[]; ended?: 'commit' | 'abort' }[] = [];
  const producer = {
    async transaction() {
      const t: { sent: TopicRecords[]; ended?: 'commit' | 'abort' } = { sent: [] };
      transactions.push(t);
      return {
        async send(request: TopicRecords) {
          // The second transaction: another replay registered the transactional id meanwhile.
          if (transactions.length === 2) throw new CuilinkError('KAFKA_PRODUCER_FENCED', 'produce to notes in a transaction: fenced (PRODUCER_FENCED)');
          t.sent.push(request);
        },
        async commit() {
          t.ended = 'commit';
        },
        async abort() {
          t.ended = 'abort';
        },
        async commitInput() {},
      };
    },
  } as unknown as KafkaProducerClient;
  let stopped: unknown;
  const run = await capture(async () => {
    try {
      await sendInTransactions(producer, sends, 'notes', 'dead.replayed', new ReplayLedger('dead.replayed'));
    } catch (error) {
      stopped = error;
    }
    return 0;
  });
  const [first, second] = transactions;
  assert.deepEqual(first!.sent.map((r) => [r.topic, r.messages.length]), [['notes', 200], ['dead.replayed', 200]]);
  assert.deepEqual(first!.sent[1]!.messages.map((m) => m.key).slice(0, 2), ['dead/0/0', 'dead/0/1']);
  assert.equal(first!.ended, 'commit');
  assert.equal(second!.ended, 'abort');
  assert.equal(run.out.filter((l) => l.startsWith('sent ')).length, 200, 'only what committed is reported sent');
  assert.ok(isBrokerFailure(stopped), 'exit 3');
  assert.equal((stopped as CuilinkError).code, 'KAFKA_PRODUCER_FENCED');
  assert.match((stopped as Error).message, /^replay stopped: another 'dlq replay' of the ledger dead\.replayed started and fenced this one \(transactional id cuilink-dlq-replay\.dead\.replayed\): 200 of 201 sent, each with its entry in the ledger dead\.replayed; the next 1 were not/);
});
