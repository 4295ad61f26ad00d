#!/usr/bin/env node
// Installs ONNX Runtime's CUDA execution-provider libraries next to onnxruntime-node's own
// libonnxruntime.so, from the npm registry only (onnxruntime-node's postinstall would fetch them
// from NuGet, which is unreachable on our machines). See docs/gpu.md.
//
//   node scripts/gpu/install-cuda-provider.mjs [--from FILE.tgz] [--check]
//
// The provider and the core must be the same ONNX Runtime release: the package below carries
// the 1.29.0 provider, built against CUDA 13, for onnxruntime-node 1.29.0.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const PROVIDER_PACKAGE = 'com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9';
const ORT_VERSION = '1.29.0';
const LIBS = ['libonnxruntime_providers_cuda.so', 'libonnxruntime_providers_shared.so'];
const CUDA_LIBS = ['libcublas.so.13', 'libcublasLt.so.13', 'libcudart.so.13', 'libcurand.so.10', 'libcufft.so.12', 'libcudnn.so.9'];

const require = createRequire(import.meta.url);
const ortPackage = JSON.parse(readFileSync(require.resolve('onnxruntime-node/package.json'), 'utf8'));
const target = join(dirname(require.resolve('onnxruntime-node/package.json')), 'bin', 'napi-v6', 'linux', 'x64');
const args = process.argv.slice(2);

function fail(message) {
  console.error(`gpu:install-provider: ${message}`);
  process.exit(1);
}

function missingCudaLibraries() {
  const seen = execFileSync('ldconfig', ['-p'], { encoding: 'utf8' });
  const extra = (process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean);
  return CUDA_LIBS.filter((lib) => !seen.includes(lib) && !extra.some((dir) => existsSync(join(dir, lib))));
}

if (process.platform !== 'linux' || process.arch !== 'x64') fail(`the CUDA provider is packaged for linux-x64 only (this is ${process.platform}-${process.arch})`);
if (ortPackage.version !== ORT_VERSION) fail(`onnxruntime-node is ${ortPackage.version}; this provider is ONNX Runtime ${ORT_VERSION} and must match the core`);

if (args.includes('--check')) {
  const installed = LIBS.filter((lib) => existsSync(join(target, lib)));
  const cuda = missingCudaLibraries();
  console.log(`provider libraries in ${target}: ${installed.length === LIBS.length ? 'installed' : `missing ${LIBS.filter((l) => !installed.includes(l)).join(', ')}`}`);
  console.log(`CUDA libraries on the loader path: ${cuda.length === 0 ? 'all found' : `missing ${cuda.join(', ')} (add their directory to LD_LIBRARY_PATH)`}`);
  process.exit(installed.length === LIBS.length && cuda.length === 0 ? 0 : 1);
}

const work = mkdtempSync(join(tmpdir(), 'cuilink-ort-cuda-'));
try {
  const fromIndex = args.indexOf('--from');
  let tarball = fromIndex >= 0 ? args[fromIndex + 1] : undefined;
  if (!tarball) {
    console.log(`fetching ${PROVIDER_PACKAGE} from the npm registry …`);
    const name = execFileSync('npm', ['pack', PROVIDER_PACKAGE, '--silent', '--pack-destination', work], { encoding: 'utf8' }).trim().split('\n').pop();
    tarball = join(work, name);
  }
  execFileSync('tar', ['-xzf', tarball, '-C', work]);
  const found = new Map();
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (LIBS.includes(entry.name)) found.set(entry.name, path);
    }
  };
  walk(work);
  for (const lib of LIBS) {
    if (!found.has(lib)) fail(`${PROVIDER_PACKAGE} has no ${lib}`);
    copyFileSync(found.get(lib), join(target, lib));
  }
  console.log(`installed ${LIBS.join(', ')} into ${target}`);
  const cuda = missingCudaLibraries();
  if (cuda.length > 0) console.log(`note: ${cuda.join(', ')} not found on the loader path; without them '--provider cuda' fails and 'auto' falls back to the CPU`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
