import { fileURLToPath } from 'node:url';

/**
 * The package's root directory (the one holding package.json, models/, samples/), found from this
 * file rather than the working directory: src/kb/ and, compiled, dist/kb/ are both two levels down.
 * Defaults that ship with the package (models, samples, schemas) resolve from here, so a command
 * run from any directory finds them. It lives in src/kb, the first stage, so every folder may use it.
 */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
