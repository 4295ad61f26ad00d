import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { CuilinkError } from '../kb/errors.ts';
import { isProcessAlive } from '../kb/process-alive.ts';
import { ensureKafkaJars, requireTool } from './kafka-jars.ts';
import { createKafkaClient } from './kafka-client.ts';

/**
 * A single-node Apache Kafka 3.9 broker (KRaft, combined broker and controller) on loopback, run
 * from the Maven-resolved jars in .kafka/lib: the real broker behind `npm run kafka:start`, the
 * demo and every integration test.
 */
export interface LocalBroker {
  /** e.g. ['127.0.0.1:PORT'] (the PLAINTEXT listener) */
  brokers: string[];
  /** Every client listener's address by its name: `PLAINTEXT` and those asked for in `listeners`. */
  listeners: Record<string, string[]>;
  dataDir: string;
  /** Process id of the broker JVM. */
  pid: number;
  /**
   * Resolves, saying how it ended and with its log's last lines, when the JVM exits before stop()
   * was called (a crash, the OOM killer, a kill); never resolves otherwise.
   */
  died: Promise<string>;
  /** Idempotent; SIGTERM, then SIGKILL after the stop timeout. */
  stop(): Promise<void>;
}

export interface LocalBrokerOptions {
  /** 0 or undefined: a free loopback port. */
  port?: number;
  /** Kept across runs when given (the storage is formatted once); a temporary one is deleted on stop. */
  dataDir?: string;
  /** Receives the broker's stdout/stderr lines (its own log is written to dataDir/logs/server.log). */
  log?: (line: string) => void;
  startTimeoutMs?: number;
  stopTimeoutMs?: number;
  /** Keep the broker running after this process exits (`npm run kafka:start`). */
  detached?: boolean;
  /** Broker class path directory; default .kafka/lib (Kafka 3.9.1, resolved by Maven on first use). */
  libDir?: string;
  /** Extra server.properties entries, e.g. `{ 'num.partitions': '3' }`. */
  properties?: Record<string, string>;
  /**
   * Client listeners besides PLAINTEXT, each on a free loopback port (their TLS/SASL settings go in
   * `properties`, e.g. `listener.name.secure.sasl.enabled.mechanisms`). The broker's own traffic
   * and the start probe stay on PLAINTEXT.
   */
  listeners?: { name: string; protocol: 'SSL' | 'SASL_SSL' | 'SASL_PLAINTEXT' }[];
  /** SCRAM credentials written into the metadata when the storage is formatted (`kafka-storage format --add-scram`); a kept, formatted data dir keeps its own. */
  scramUsers?: { mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512'; username: string; password: string }[];
}

const JVM_HEAP = ['-Xms256m', '-Xmx512m'];

/** Rejects when `port` cannot be bound on loopback, before the JVM is spawned. */
async function requireFreePort(port: number): Promise<void> {
  await new Promise<void>((resolvePort, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => {
      // Our start probe would otherwise be answered by whatever listens there (another Kafka) and
      // report a broker that is exiting on its bind error as ready.
      const message = error.code === 'EADDRINUSE' ? `port ${port} on 127.0.0.1 is already in use (another Kafka broker?): stop it or choose another port` : `cannot listen on 127.0.0.1:${port}: ${error.message}`;
      reject(new CuilinkError('BROKER_START_FAILED', message, { cause: error }));
    });
    server.listen(port, '127.0.0.1', () => server.close(() => resolvePort()));
  });
}

/**
 * `count` distinct free loopback ports. All are held open until every one is known: a port closed
 * before the next is asked for can be handed out again, and two listeners on one port stop the
 * broker at format time ("two listeners on the same port").
 */
export async function freeLoopbackPorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      ports.push(
        await new Promise<number>((resolvePort, reject) => {
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => {
            const address = server.address();
            resolvePort(typeof address === 'object' && address !== null ? address.port : 0);
          });
        }),
      );
    }
    return ports;
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((done) => (server.listening ? server.close(() => done()) : done()))));
  }
}

interface ExtraListener {
  name: string;
  protocol: string;
  port: number;
}

function serverProperties(dataDir: string, port: number, controllerPort: number, extra: Record<string, string>, listeners: ExtraListener[] = []): string {
  const more = (render: (l: ExtraListener) => string): string => listeners.map((l) => `,${render(l)}`).join('');
  const props: Record<string, string> = {
    'process.roles': 'broker,controller',
    'node.id': '1',
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}${more((l) => `${l.name}://127.0.0.1:${l.port}`)}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${port}${more((l) => `${l.name}://127.0.0.1:${l.port}`)}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': `PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT${more((l) => `${l.name}:${l.protocol}`)}`,
    'log.dirs': join(dataDir, 'data'),
    'num.partitions': '1',
    'auto.create.topics.enable': 'false',
    'offsets.topic.replication.factor': '1',
    // Fewer internal partitions: faster first group join and first transaction on a small machine.
    'offsets.topic.num.partitions': '4',
    'transaction.state.log.num.partitions': '4',
    'transaction.state.log.replication.factor': '1',
    'transaction.state.log.min.isr': '1',
    'min.insync.replicas': '1',
    'default.replication.factor': '1',
    'group.initial.rebalance.delay.ms': '0',
    'num.network.threads': '2',
    'num.io.threads': '4',
    ...extra,
  };
  return `${Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;
}

function log4jProperties(logFile: string): string {
  return [
    'log4j.rootLogger=INFO, file',
    'log4j.logger.kafka.request.logger=WARN',
    'log4j.logger.org.apache.kafka.controller=INFO',
    'log4j.appender.file=org.apache.log4j.FileAppender',
    `log4j.appender.file.File=${logFile}`,
    'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
    '',
  ].join('\n');
}

/** Formats the KRaft storage of a new data dir; a formatted one keeps its cluster id and data. */
function formatStorage(classPath: string, dataDir: string, configFile: string, log4jFile: string, scramUsers: NonNullable<LocalBrokerOptions['scramUsers']> = []): void {
  if (existsSync(join(dataDir, 'data', 'meta.properties'))) return;
  // `=` form: a base64url id may start with '-', which the tool would read as an option.
  const clusterId = randomBytes(16).toString('base64url');
  const scram = scramUsers.flatMap((u) => {
    if (/["\\]/.test(u.username + u.password)) throw new CuilinkError('BROKER_START_FAILED', `SCRAM user ${u.username}: a name or password with " or \\ cannot be formatted`);
    return ['--add-scram', `${u.mechanism}=[name="${u.username}",password="${u.password}"]`];
  });
  const result = spawnSync(
    'java',
    [`-Dlog4j.configuration=file:${log4jFile}`, '-cp', classPath, 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, '-c', configFile, '--ignore-formatted', ...scram],
    { encoding: 'utf8' },
  );
  if (result.status !== 0) {
    throw new CuilinkError('BROKER_START_FAILED', `formatting Kafka storage in ${dataDir} failed: ${firstError(`${result.stdout}${result.stderr}`)}`);
  }
}

function firstError(output: string): string {
  const lines = output.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('log4j:') && !/^\s/.test(l));
  return lines.find((l) => /exception|error/i.test(l)) ?? lines.at(-1) ?? '(no output)';
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

async function waitUntilAnswering(brokers: string[], child: ChildProcess, logFile: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const admin = createKafkaClient({ brokers, clientId: 'cuilink-broker-probe', connectionTimeoutMs: 1000, requestTimeoutMs: 3000, retry: { retries: 0 }, logLevel: 'nothing' }).admin();
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (exited(child)) {
      throw new CuilinkError('BROKER_START_FAILED', `the Kafka broker exited during start (code ${child.exitCode ?? child.signalCode}); see ${logFile}: ${tail(logFile)}`);
    }
    try {
      await admin.listTopics();
      await admin.close();
      return;
    } catch (error) {
      lastError = error;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await admin.close();
  throw new CuilinkError('BROKER_START_TIMEOUT', `the Kafka broker did not answer on ${brokers.join(',')} within ${timeoutMs} ms (${String(lastError)}); see ${logFile}`, {
    retriable: true,
  });
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-3).join(' | ');
  } catch {
    return '(no log)';
  }
}

/** Sends SIGTERM, then SIGKILL when `pid` is still alive after `timeoutMs`; resolves once it is gone. */
export async function terminateProcess(pid: number, timeoutMs: number): Promise<void> {
  const alive = (): boolean => isProcessAlive(pid);
  if (!alive()) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + timeoutMs;
  while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (alive()) {
    process.kill(pid, 'SIGKILL');
    while (alive()) await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A shell that waits for its stdin (our end of a pipe) to close, then stops the broker and, for a
 * temporary broker, removes its data directory (a Ctrl-C ends this process before any handler).
 */
function startWatchdog(brokerPid: number, temporaryDir: string | undefined): ChildProcess {
  const quoted = temporaryDir === undefined ? undefined : `'${temporaryDir.replaceAll("'", "'\\''")}'`;
  const wait = `i=0; while kill -0 ${brokerPid} 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done`;
  const script = `read _; kill -TERM ${brokerPid} 2>/dev/null; ${wait}; kill -KILL ${brokerPid} 2>/dev/null${quoted === undefined ? '' : `; sleep 0.5; rm -rf ${quoted}`}`;
  const watchdog = spawn('sh', ['-c', script], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  watchdog.unref();
  (watchdog.stdin as unknown as { unref?: () => void }).unref?.();
  watchdog.on('error', () => {});
  return watchdog;
}

export async function startLocalBroker(options: LocalBrokerOptions = {}): Promise<LocalBroker> {
  const log = options.log ?? (() => {});
  requireTool('java', 'JAVA_NOT_FOUND');
  const lib = options.libDir ?? ensureKafkaJars(log);
  const temporary = options.dataDir === undefined;
  const dataDir = temporary ? mkdtempSync(join(tmpdir(), 'cuilink-kafka-')) : resolve(options.dataDir!);
  let prepared: Awaited<ReturnType<typeof prepareBroker>>;
  let child: ChildProcess;
  try {
    prepared = await prepareBroker(dataDir, options, lib);
    child = spawnBroker(dataDir, prepared, options, log);
  } catch (error) {
    // Until the broker runs (its stop() cleans up after that), a failure leaves no temporary directory behind.
    if (temporary) rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const { port, extraListeners, logFile } = prepared;
  const pid = child.pid!;
  let stopCalled = false;
  const died = new Promise<string>((resolveDied) => {
    child.once('exit', (code, signal) => {
      if (!stopCalled) resolveDied(`${signal === null ? `exit code ${code}` : `signal ${signal}`}; the end of its server.log: ${tail(logFile)}`);
    });
  });

  // A test that crashes must not leave a JVM behind: on a normal exit the handler kills it; when
  // this process is killed outright, the watchdog sees its stdin close and kills the broker.
  const killOnExit = (): void => {
    if (!exited(child)) child.kill('SIGKILL');
  };
  const watchdog = options.detached === true ? undefined : startWatchdog(pid, temporary ? dataDir : undefined);
  if (options.detached !== true) process.once('exit', killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopCalled = true;
    stopping ??= (async () => {
      process.removeListener('exit', killOnExit);
      if (!exited(child)) await terminateProcess(pid, options.stopTimeoutMs ?? 15_000);
      watchdog?.kill('SIGKILL');
      if (temporary) rmSync(dataDir, { recursive: true, force: true });
    })();
    return stopping;
  };

  const brokers = [`127.0.0.1:${port}`];
  try {
    await waitUntilAnswering(brokers, child, logFile, options.startTimeoutMs ?? 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  log(`Kafka broker ready on ${brokers[0]} (pid ${pid}, data ${dataDir})`);
  const listeners: Record<string, string[]> = { PLAINTEXT: brokers };
  for (const l of extraListeners) listeners[l.name] = [`127.0.0.1:${l.port}`];
  return { brokers, listeners, dataDir, pid, died, stop };
}

/** The broker's files in `dataDir`: its ports, config and formatted storage. */
async function prepareBroker(dataDir: string, options: LocalBrokerOptions, lib: string) {
  mkdirSync(join(dataDir, 'logs'), { recursive: true });
  const fixed = options.port !== undefined && options.port !== 0;
  if (fixed) await requireFreePort(options.port!);
  // Asked for together, so no two listeners get the same port (nor the fixed one, held by nobody but free).
  let free: number[];
  do free = await freeLoopbackPorts(1 + (options.listeners?.length ?? 0) + (fixed ? 0 : 1));
  while (fixed && free.includes(options.port!));
  const port = fixed ? options.port! : free.pop()!;
  const controllerPort = free.pop()!;
  const extraListeners: ExtraListener[] = [];
  for (const l of options.listeners ?? []) {
    const name = l.name.toUpperCase();
    if (!/^[A-Z][A-Z0-9_]*$/.test(name) || ['PLAINTEXT', 'CONTROLLER'].includes(name) || extraListeners.some((e) => e.name === name)) {
      throw new CuilinkError('BROKER_START_FAILED', `listener name '${l.name}' must be [A-Za-z][A-Za-z0-9_]*, unique, and not PLAINTEXT or CONTROLLER`);
    }
    extraListeners.push({ name, protocol: l.protocol, port: free.pop()! });
  }
  const configFile = join(dataDir, 'server.properties');
  const log4jFile = join(dataDir, 'log4j.properties');
  const logFile = join(dataDir, 'logs', 'server.log');
  writeFileSync(configFile, serverProperties(dataDir, port, controllerPort, options.properties ?? {}, extraListeners));
  writeFileSync(log4jFile, log4jProperties(logFile));
  const classPath = join(lib, '*');
  formatStorage(classPath, dataDir, configFile, log4jFile, options.scramUsers);
  return { port, extraListeners, configFile, log4jFile, logFile, classPath };
}

/** Starts the broker's JVM on the prepared files. */
function spawnBroker(dataDir: string, files: { classPath: string; configFile: string; log4jFile: string }, options: LocalBrokerOptions, log: (line: string) => void): ChildProcess {
  const { classPath, configFile, log4jFile } = files;
  const jvmArgs = [...JVM_HEAP, '-Djava.awt.headless=true', `-Dlog4j.configuration=file:${log4jFile}`, `-Dkafka.logs.dir=${join(dataDir, 'logs')}`, '-cp', classPath, 'kafka.Kafka', configFile];
  let child: ChildProcess;
  if (options.detached === true) {
    const out = openSync(join(dataDir, 'logs', 'broker.out'), 'a');
    child = spawn('java', jvmArgs, { detached: true, stdio: ['ignore', out, out] });
    closeSync(out);
    child.unref();
  } else {
    child = spawn('java', jvmArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on('line', log);
  }
  if (child.pid === undefined) throw new CuilinkError('BROKER_START_FAILED', 'could not start `java` for the Kafka broker');
  return child;
}
