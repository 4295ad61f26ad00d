import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CuilinkError } from '../kb/errors.ts';

/** The repository root, found from this module so that any working directory works. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Local broker state (jars, the background broker's pid file), git-ignored. */
export const KAFKA_HOME = join(REPO_ROOT, '.kafka');
export const KAFKA_LIB = join(KAFKA_HOME, 'lib');
const POM = join(REPO_ROOT, 'scripts', 'kafka', 'pom.xml');

function hasBrokerJar(dir: string): boolean {
  return existsSync(dir) && readdirSync(dir).some((f) => /^kafka_2\.13-.*\.jar$/.test(f));
}

/** Throws a clear error when `tool` cannot be run; `java` and `mvn` are the only external needs. */
export function requireTool(tool: 'java' | 'mvn', code: string): void {
  const result = spawnSync(tool, tool === 'java' ? ['-version'] : ['-v'], { stdio: 'ignore' });
  if (result.error !== undefined || result.status !== 0) {
    const what = tool === 'java' ? 'a Java 17+ runtime (`java` on PATH)' : 'Apache Maven (`mvn` on PATH)';
    throw new CuilinkError(code, `the local Kafka broker needs ${what}; install it (e.g. apt-get install ${tool === 'java' ? 'openjdk-17-jre-headless' : 'maven'})`);
  }
}

/**
 * The broker's class path directory, resolving the jars with Maven into .kafka/lib the first
 * time (Maven caches them in ~/.m2, so a second clone resolves offline in seconds). Copies into a
 * private directory and renames it into place, so concurrent first runs cannot see half a lib.
 */
export function ensureKafkaJars(log: (line: string) => void = () => {}): string {
  if (hasBrokerJar(KAFKA_LIB)) return KAFKA_LIB;
  requireTool('mvn', 'MAVEN_NOT_FOUND');
  mkdirSync(KAFKA_HOME, { recursive: true });
  const staging = join(KAFKA_HOME, `lib.partial-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  log(`resolving Apache Kafka jars with Maven into ${KAFKA_LIB}`);
  const result = spawnSync('mvn', ['-q', '-B', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${staging}`], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  if (result.error !== undefined || result.status !== 0 || !hasBrokerJar(staging)) {
    rmSync(staging, { recursive: true, force: true });
    const detail = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-5).join('\n');
    throw new CuilinkError('KAFKA_JARS_UNAVAILABLE', `Maven could not resolve the Kafka broker from ${POM}${detail ? `:\n${detail}` : ''}`, {
      retriable: true,
      cause: result.error,
    });
  }
  try {
    renameSync(staging, KAFKA_LIB);
  } catch (error) {
    // Another process won the race; its complete copy is as good as ours.
    rmSync(staging, { recursive: true, force: true });
    if (!hasBrokerJar(KAFKA_LIB)) throw error;
  }
  return KAFKA_LIB;
}
