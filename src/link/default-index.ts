import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_ONTOLOGY, ensureDefaultOntology } from '../kb/default-ontology.ts';
import { PACKAGE_ROOT } from '../kb/package-root.ts';
import { modelChecksum, readModelManifest } from '../encode/manifest.ts';
import { buildIndexFromKb } from './build-index-from-kb.ts';

/** The shipped bi-encoder, found from the package root (not the working directory). */
export const DEFAULT_MODEL_DIR = join(PACKAGE_ROOT, 'models', 'default', 'biencoder');

/** Where cuilink caches what it fetches or builds for its defaults (`CUILINK_CACHE_DIR`, else .cache/cuilink in the package root). */
export function defaultCacheDir(): string {
  return process.env.CUILINK_CACHE_DIR ?? join(PACKAGE_ROOT, '.cache', 'cuilink');
}

/**
 * The index `cuilink run` uses when none is given: the default ontology (HPO from PyPI) encoded
 * with the default model. Built once per model (id and manifest checksum) and cached; later starts
 * reuse it.
 */
export async function ensureDefaultIndex(options: { cacheDir?: string; modelDir?: string; log?: (line: string) => void } = {}): Promise<string> {
  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const modelDir = options.modelDir ?? DEFAULT_MODEL_DIR;
  const log = options.log ?? (() => {});
  const model = readModelManifest(modelDir);
  const dir = join(cacheDir, 'indexes', `${DEFAULT_ONTOLOGY.pipPackage}-${DEFAULT_ONTOLOGY.version}-hpo--${model.id}-${modelChecksum(modelDir).slice(0, 12)}`);
  if (existsSync(join(dir, 'manifest.json'))) return dir;
  const ontology = ensureDefaultOntology(cacheDir, log);
  log(`building the default index (${DEFAULT_ONTOLOGY.name}) with ${model.id} into ${dir} (once)`);
  await buildIndexFromKb({ kbPaths: [ontology], modelDir, outDir: dir, overwrite: true, log });
  return dir;
}
