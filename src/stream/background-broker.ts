import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { isProcessAlive } from '../kb/process-alive.ts';
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

/** The process's command line, or undefined where neither /proc nor ps can tell. */
function commandLine(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    const ps = spawnSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' });
    if (ps.error !== undefined) return undefined;
    return ps.status === 0 ? ps.stdout : '';
  }
}

/**
 * Whether `record.pid` is still the broker it names: after a reboot or a container restart the
 * pid in a stale record may belong to any process, which `stop` would otherwise kill.
 */
function isRecordedBroker(record: BackgroundBrokerRecord): boolean {
  if (!isProcessAlive(record.pid)) return false;
  const args = commandLine(record.pid);
  return args === undefined || (args.includes('kafka.Kafka') && args.includes(join(record.dataDir, 'server.properties')));
}

function readRecord(): unknown {
  try {
    return JSON.parse(readFileSync(BACKGROUND_BROKER_FILE, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The running background broker, or undefined (a stale, unreadable or foreign record is removed). */
export function readBackgroundBroker(): BackgroundBrokerRecord | undefined {
  if (!existsSync(BACKGROUND_BROKER_FILE)) return undefined;
  const parsed = recordSchema.safeParse(readRecord());
  if (!parsed.success || !isRecordedBroker(parsed.data)) {
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
  // Renamed into place: a crash or a full disk mid-write must not leave a record that cannot be read.
  const partial = `${BACKGROUND_BROKER_FILE}.${process.pid}`;
  writeFileSync(partial, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(partial, BACKGROUND_BROKER_FILE);
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
