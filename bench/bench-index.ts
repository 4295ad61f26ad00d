import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { readIndexManifest } from '../src/retrieve/index-manifest.ts';
import { basename, join } from 'node:path';
import { modelChecksum, readModelManifest } from '../src/encode/manifest.ts';
import { PACKAGE_ROOT } from '../src/kb/package-root.ts';

export interface BenchIndexRequest {
  kb: string;
  /** `--kb-supplement` files (part of the cache directory's name). */
  supplements?: readonly string[];
  /** `--xref-names` files (part of the cache directory's name). */
  xrefNames?: readonly string[];
  modelDir: string;
  /** Reuse this directory instead of the cache. */
  indexDir?: string;
  rebuild?: boolean;
  provider?: string;
  precision?: string;
  log: (line: string) => void;
}

/**
 * The MEDIC index every benchmark shares: cached under .cache/cuilink/bench per model (id and
 * manifest checksum) and precision, built once with `cuilink index build` in a child process so
 * the build's memory never counts in the caller's RSS. Returns the build's wall time when it ran.
 */
export function ensureBenchIndex(request: BenchIndexRequest): { indexDir: string; buildSeconds: number | null } {
  const model = readModelManifest(request.modelDir);
  // The precision the build will encode at (int8 on the CPU, fp16 on CUDA unless asked): an index
  // built at one is not the other's, so each has its own directory (the CPU int8 one keeps its name).
  const precision = request.precision ?? (request.provider === 'cuda' ? 'fp16' : undefined);
  const suffix = precision ? `--${precision}` : '';
  const supplements = request.supplements ?? [];
  const xrefNames = request.xrefNames ?? [];
  const stem = (path: string) => basename(path).replace(/\.(txt|tsv|obo|json)?(\.gz)?$/, '');
  const kbName = ['medic', ...supplements.map(stem), ...xrefNames.map((path) => `xref-${stem(path)}`)].join('+');
  const indexDir = request.indexDir ?? join('.cache', 'cuilink', 'bench', `${kbName}--${model.id}-${modelChecksum(request.modelDir).slice(0, 12)}${suffix}`);
  const expected = precision ?? (request.provider === 'cpu' || request.provider === undefined ? 'int8' : undefined);
  if (!request.rebuild && existsSync(join(indexDir, 'manifest.json'))) {
    const built = readIndexManifest(indexDir).model.precision;
    if (expected === undefined || built === expected) return { indexDir, buildSeconds: null };
    request.log(`${indexDir} holds ${built} name vectors; this run encodes at ${expected}: building it again`);
  }
  request.log(`building ${indexDir} …`);
  const t0 = performance.now();
  const args = ['bin/cuilink.js', 'index', 'build', '--kb', request.kb, '--model', request.modelDir, '--out', indexDir, '--force', '--no-progress', '--provider', request.provider ?? 'cpu'];
  for (const path of supplements) args.push('--kb-supplement', path);
  for (const path of xrefNames) args.push('--xref-names', path);
  if (request.precision) args.push('--precision', request.precision);
  const build = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
  return { indexDir, buildSeconds: (performance.now() - t0) / 1000 };
}

/** `node bin/cuilink.js ARGS` in a child process: its stdout; its output printed and an error thrown when it exits non-zero. */
export function cli(args: string[]): string {
  const run = spawnSync(process.execPath, ['bin/cuilink.js', ...args], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (run.status !== 0) {
    console.error(run.stdout, run.stderr);
    throw new Error(`cuilink ${args.slice(0, 2).join(' ')} exited ${run.status}`);
  }
  return run.stdout;
}

/**
 * Text for a committed result file without this machine's paths: the repository root is dropped
 * (paths read relative to it) and a benchmark's scratch directory reads `<tmp>`.
 */
export function portablePaths(text: string, scratch?: string): string {
  const withoutScratch = scratch === undefined ? text : text.split(scratch).join('<tmp>');
  return withoutScratch.split(PACKAGE_ROOT).join('');
}
