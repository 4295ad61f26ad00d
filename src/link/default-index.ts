import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DEFAULT_ONTOLOGY, ensureDefaultOntology, makeCacheDirs } from '../kb/default-ontology.ts';
import { PACKAGE_ROOT } from '../kb/package-root.ts';
import { modelChecksum, readModelManifest } from '../encode/manifest.ts';
import { withBuildLock } from '../retrieve/build-lock.ts';
import { buildIndexFromKb } from './build-index-from-kb.ts';

/** The shipped bi-encoder, found from the package root (not the working directory). */
export const DEFAULT_MODEL_DIR = join(PACKAGE_ROOT, 'models', 'default', 'biencoder');

/** Where cuilink caches what it fetches or builds for its defaults (`CUILINK_CACHE_DIR`, else .cache/cuilink in the package root). */
export function defaultCacheDir(): string {
  return process.env.CUILINK_CACHE_DIR ?? join(PACKAGE_ROOT, '.cache', 'cuilink');
}

/** Where the default index built with the model in `modelDir` is cached: one per model id and manifest checksum. */
export function defaultIndexDir(cacheDir: string, modelDir: string): string {
  return join(cacheDir, 'indexes', `${DEFAULT_ONTOLOGY.pipPackage}-${DEFAULT_ONTOLOGY.version}-hpo--${readModelManifest(modelDir).id}-${modelChecksum(modelDir).slice(0, 12)}`);
}

/**
 * The index `cuilink run` uses when none is given: the default ontology (HPO from PyPI) encoded
 * with the default model. Built once per model (id and manifest checksum) and cached; later starts
 * reuse it. Two first runs on one cache (replicas on a shared cache volume, `demo` beside `link`)
 * build it once: the other waits for the build under `<index>.lock` (build-lock.ts, at most
 * `lockWaitMs`) and uses the index it made.
 */
export async function ensureDefaultIndex(options: { cacheDir?: string; modelDir?: string; log?: (line: string) => void; lockWaitMs?: number } = {}): Promise<string> {
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const modelDir = options.modelDir ?? DEFAULT_MODEL_DIR;
  const log = options.log ?? (() => {});
  const dir = defaultIndexDir(cacheDir, modelDir);
  const built = () => existsSync(join(dir, 'manifest.json'));
  if (built()) return dir;
  makeCacheDirs(cacheDir, [dirname(dir)]);
  return withBuildLock(`${dir}.lock`, { what: 'the default index', log, waitMs: options.lockWaitMs }, async () => {
    if (built()) return dir;
    const ontology = ensureDefaultOntology(cacheDir, log);
    log(`building the default index (${DEFAULT_ONTOLOGY.name}) with ${readModelManifest(modelDir).id} into ${dir} (once)`);
    await buildIndexFromKb({ kbPaths: [ontology], modelDir, outDir: dir, overwrite: true, log });
    return dir;
  });
}
