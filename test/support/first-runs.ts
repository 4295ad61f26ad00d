import { spawn } from 'node:child_process';
import { join } from 'node:path';

const FIRST_RUN = join(import.meta.dirname, 'first-run-process.ts');

export interface FirstRunExit {
  code: number | null;
  /** What it printed: the path it returned, or the error. */
  stdout: string;
  /** Its log lines. */
  stderr: string;
}

/**
 * Starts `count` first runs (first-run-process.ts) on one cache directory and lets them go at once,
 * after every one has loaded everything: none can finish before another has looked at the cache.
 */
export async function runFirstRunsTogether(count: number, cacheDir: string, options: { ontologyOnly?: boolean; env?: NodeJS.ProcessEnv } = {}): Promise<FirstRunExit[]> {
  const runs = Array.from({ length: count }, () => {
    const args = ['--import', 'tsx', FIRST_RUN, cacheDir, ...(options.ontologyOnly ? ['ontology'] : [])];
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
    // One that died before it read 'go' has its exit to tell.
    child.stdin.on('error', () => {});
    let stdout = '';
    let stderr = '';
    let signalReady: () => void = () => {};
    const ready = new Promise<void>((resolve) => (signalReady = resolve));
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.startsWith('ready\n')) signalReady();
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exit = new Promise<FirstRunExit>((resolve) => child.once('exit', (code) => resolve({ code, stdout: stdout.replace(/^ready\n/, ''), stderr })));
    return { child, ready: Promise.race([ready, exit.then(() => {})]), exit };
  });
  await Promise.all(runs.map((run) => run.ready));
  for (const run of runs) run.child.stdin.end('go\n');
  return Promise.all(runs.map((run) => run.exit));
}
