import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { KAFKA_HOME } from './kafka-jars.ts';
import { startLocalBroker, terminateProcess } from './local-broker.ts';

/**
 * The long-lived development broker of `npm run kafka:start|stop`: its data stays in
 * .kafka/data across restarts and its pid and address are written to .kafka/broker.json, where
 * `stop` (and anything that wants a running broker) finds them.
 */
export const BACKGROUND_BROKER_FILE = join(KAFKA_HOME, 'broker.json');
const BACKGROUND_DATA_DIR = join(KAFKA_HOME, 'data');

const recordSchema = z.object({ pid: z.number().int().positive(), brokers: z.array(z.string()).min(1), dataDir: z.string(), startedAt: z.string() });
export type BackgroundBrokerRecord = z.infer<typeof recordSchema>;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The running background broker, or undefined (a stale record from a dead broker is removed). */
export function readBackgroundBroker(): BackgroundBrokerRecord | undefined {
  if (!existsSync(BACKGROUND_BROKER_FILE)) return undefined;
  const parsed = recordSchema.safeParse(JSON.parse(readFileSync(BACKGROUND_BROKER_FILE, 'utf8')));
  if (!parsed.success || !isAlive(parsed.data.pid)) {
    rmSync(BACKGROUND_BROKER_FILE, { force: true });
    return undefined;
  }
  return parsed.data;
}

export async function startBackgroundBroker(options: { port?: number; log?: (line: string) => void } = {}): Promise<{ record: BackgroundBrokerRecord; alreadyRunning: boolean }> {
  const running = readBackgroundBroker();
  if (running !== undefined) return { record: running, alreadyRunning: true };
  const broker = await startLocalBroker({ port: options.port ?? 9092, dataDir: BACKGROUND_DATA_DIR, detached: true, log: options.log });
  const record: BackgroundBrokerRecord = { pid: broker.pid, brokers: broker.brokers, dataDir: broker.dataDir, startedAt: new Date().toISOString() };
  writeFileSync(BACKGROUND_BROKER_FILE, `${JSON.stringify(record, null, 2)}\n`);
  return { record, alreadyRunning: false };
}

/** Stops the background broker; false when none was running. */
export async function stopBackgroundBroker(timeoutMs = 20_000): Promise<boolean> {
  const running = readBackgroundBroker();
  if (running === undefined) return false;
  await terminateProcess(running.pid, timeoutMs);
  rmSync(BACKGROUND_BROKER_FILE, { force: true });
  return true;
}
