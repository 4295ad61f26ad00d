import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BACKGROUND_BROKER_FILE, readBackgroundBroker, stopBackgroundBroker } from '../../../src/stream/background-broker.ts';
import { KAFKA_HOME } from '../../../src/stream/kafka-jars.ts';

/** Runs `body` with `content` as .kafka/broker.json, then puts back whatever a developer's own broker had there. */
async function withRecord(content: string, body: () => Promise<void>): Promise<void> {
  const saved = existsSync(BACKGROUND_BROKER_FILE) ? readFileSync(BACKGROUND_BROKER_FILE) : undefined;
  mkdirSync(dirname(BACKGROUND_BROKER_FILE), { recursive: true });
  writeFileSync(BACKGROUND_BROKER_FILE, content);
  try {
    await body();
  } finally {
    if (saved === undefined) rmSync(BACKGROUND_BROKER_FILE, { force: true });
    else writeFileSync(BACKGROUND_BROKER_FILE, saved);
  }
}

test('a stale record whose pid now belongs to another process (a reboot, a container restart) is not taken for the broker: stop leaves that process alone', async () => {
  const other = spawn('sleep', ['30'], { stdio: 'ignore' });
  const record = { pid: other.pid, brokers: ['127.0.0.1:9092'], dataDir: join(KAFKA_HOME, 'data'), startedAt: '2024-01-01T00:00:00.000Z' };
  try {
    await withRecord(JSON.stringify(record), async () => {
      assert.equal(readBackgroundBroker(), undefined, 'a sleep is not the background broker');
      assert.equal(existsSync(BACKGROUND_BROKER_FILE), false, 'the stale record is removed');
      assert.equal(await stopBackgroundBroker(1000), false, 'nothing to stop');
      assert.equal(other.exitCode, null);
      assert.equal(other.signalCode, null, 'the unrelated process was not signalled');
    });
  } finally {
    other.kill('SIGKILL');
  }
});

test('an unreadable record (empty after a crash or a full disk) reads as no broker instead of throwing', async () => {
  for (const content of ['', '{"pid": 1']) {
    await withRecord(content, async () => {
      assert.equal(readBackgroundBroker(), undefined, JSON.stringify(content));
      assert.equal(existsSync(BACKGROUND_BROKER_FILE), false, 'the unreadable record is removed');
    });
  }
});
