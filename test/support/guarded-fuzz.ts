import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { InputError } from '../../src/kb/errors.ts';
import { lcg } from './lcg.ts';

/**
 * A seeded fuzz over operator-supplied files whose cases run in a worker thread, so that a case
 * that never ends (a cycle walked forever, a quadratic loop over 100k names) is caught by a hang
 * guard on the main thread and named, instead of freezing the test process: a synchronous loop
 * would block any timer of the thread it runs on. The guard is generous (no timed assertion): it
 * only tells a hang from a slow machine.
 */

/** One mutated input and how to drive it through the real loader or validator. */
export interface FuzzCase {
  /** The mutation and its parameters: with the seed and case number, enough to rebuild it. */
  what: string;
  /** The path an error must name (as given to the loader). */
  file: string;
  /** The stable codes a refusal of this input may carry. */
  codes: readonly string[];
  /** Reads the input; a return is success, a throw is judged. Returns a problem found on success (an invariant broken), if any. */
  run: () => Promise<string | undefined> | string | undefined;
}

/** Builds case `index` of `seed` from the seed's random stream; files go under `dir` (removed after the case). */
export type CaseBuilder = (random: () => number, index: number, dir: string, seed: number) => FuzzCase;

export interface FuzzPlan {
  seeds: number[];
  cases: number;
}

/**
 * The seeds and case count, overridable to rerun one failure: CUILINK_FUZZ_SEED=<seed>
 * CUILINK_FUZZ_CASES=<case + 1>. CUILINK_FUZZ_LOG=1 prints every case with its time and outcome.
 */
export function fuzzPlan(seeds: number[], cases: number): FuzzPlan {
  const seed = process.env.CUILINK_FUZZ_SEED;
  return { seeds: seed ? [Number(seed)] : seeds, cases: Number(process.env.CUILINK_FUZZ_CASES ?? cases) };
}

/**
 * Why an error is not a clear refusal of bad input (undefined when it is): it must be an InputError
 * with one of the case's codes whose message names the file. Anything else (a TypeError, a stack
 * overflow, an InputError without the file) is how an internal fault reaches the operator.
 */
export function refusalProblem(error: unknown, fuzzCase: Pick<FuzzCase, 'file' | 'codes'>): string | undefined {
  if (!(error instanceof InputError)) {
    const stack = error instanceof Error ? (error.stack ?? String(error)).split('\n').slice(0, 4).join(' | ') : String(error);
    return `not an InputError: ${stack}`;
  }
  if (!fuzzCase.codes.includes(error.code)) return `code ${error.code} is not one of ${fuzzCase.codes.join(', ')}: ${error.message.slice(0, 300)}`;
  if (!error.message.includes(fuzzCase.file)) return `the message does not name ${fuzzCase.file}: ${error.message.slice(0, 300)}`;
  return undefined;
}

type Report = { kind: 'start' | 'end'; seed: number; index: number; what: string; problem?: string; outcome?: string };

/**
 * Worker side: runs every case of the plan (workerData) and reports each start and end to the
 * main thread. Call it from the test file when it runs as the worker.
 */
export async function serveCases(build: CaseBuilder): Promise<void> {
  const plan = workerData as FuzzPlan;
  const post = (report: Report) => parentPort!.postMessage(report);
  for (const seed of plan.seeds) {
    const random = lcg(seed);
    for (let index = 0; index < plan.cases; index++) {
      const dir = mkdtempSync(join(tmpdir(), 'cuilink-input-fuzz-'));
      try {
        const fuzzCase = build(random, index, dir, seed);
        post({ kind: 'start', seed, index, what: fuzzCase.what });
        let problem: string | undefined;
        let outcome = 'loaded';
        try {
          problem = await fuzzCase.run();
        } catch (error) {
          problem = refusalProblem(error, fuzzCase);
          outcome = `refused ${(error as { code?: string }).code}`;
        }
        post({ kind: 'end', seed, index, what: fuzzCase.what, problem, outcome });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
}

/**
 * Main side: runs the cases of `entry` (a module that calls serveCases when it is a worker) in a
 * worker and returns one line per failed case, naming seed, case and mutation; a case still
 * running after `guardMs` ends the run as a hang.
 */
export async function runGuardedCases(entry: URL, plan: FuzzPlan, guardMs = 120_000): Promise<{ failures: string[]; cases: number }> {
  const tsxApi = import.meta.resolve('tsx/esm/api');
  // A worker does not inherit the tsx loader: it registers it before importing the .ts entry.
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
  const worker = new Worker(bootstrap, { eval: true, workerData: plan });
  const failures: string[] = [];
  let cases = 0;
  let running: Report | undefined;
  let guard: NodeJS.Timeout | undefined;
  const name = (r: Report) => `seed ${r.seed} case ${r.index} (${r.what})`;
  await new Promise<void>((resolve) => {
    let started = 0;
    worker.on('message', (report: Report) => {
      clearTimeout(guard);
      if (report.kind === 'start') {
        running = report;
        started = performance.now();
        guard = setTimeout(() => {
          failures.push(`${name(report)}: no outcome after ${guardMs / 1000} s (a hang)`);
          running = undefined;
          void worker.terminate();
        }, guardMs);
        return;
      }
      if (process.env.CUILINK_FUZZ_LOG) process.stderr.write(`${name(report)} ${Math.round(performance.now() - started)} ms: ${report.problem ?? report.outcome}\n`);
      running = undefined;
      cases++;
      if (report.problem !== undefined) failures.push(`${name(report)}: ${report.problem}`);
    });
    worker.on('error', (error) => {
      failures.push(`${running ? name(running) : 'worker'}: uncaught ${error.stack ?? error}`);
      running = undefined;
    });
    worker.on('exit', (code) => {
      clearTimeout(guard);
      // Out of memory or a crash of the runtime: the case it was in is the culprit.
      if (running) failures.push(`${name(running)}: the worker ended (exit code ${code}) before the case did`);
      resolve();
    });
  });
  return { failures, cases };
}

/**
 * One guarded fuzz test per module: on the main thread a test that runs the plan's cases in a
 * worker (runGuardedCases) and fails on any failed case or one never reported; in the worker,
 * `prepare` (fixtures the cases share), then every case (serveCases), then `cleanup`.
 */
export async function guardedFuzzTest(
  title: string,
  entry: URL,
  plan: FuzzPlan,
  build: CaseBuilder,
  options: { timeoutMs?: number; guardMs?: number; prepare?: () => unknown; cleanup?: () => void } = {},
): Promise<void> {
  if (isMainThread) {
    test(title, { timeout: options.timeoutMs ?? 600_000 }, async () => {
      const { failures, cases } = await runGuardedCases(entry, plan, options.guardMs);
      assert.deepEqual(failures, []);
      assert.equal(cases, plan.seeds.length * plan.cases);
    });
    return;
  }
  try {
    await options.prepare?.();
    await serveCases(build);
  } finally {
    options.cleanup?.();
  }
}

/** A random integer in [0, below). */
export const int = (random: () => number, below: number): number => Math.floor(random() * below);
export const pick = <T>(random: () => number, items: readonly T[]): T => items[int(random, items.length)]!;
