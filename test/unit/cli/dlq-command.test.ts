import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dlqInspect, parseTime, replayStopped, showsFirstBytes } from '../../../src/cli/commands/dlq.ts';
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
