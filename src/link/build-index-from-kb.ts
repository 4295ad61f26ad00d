import { existsSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { InputError } from '../kb/errors.ts';
import { loadKb, type KbLoadOptions } from '../kb/load.ts';
import { PACKAGE_ROOT } from '../kb/package-root.ts';
import { BiEncoder } from '../encode/bi-encoder.ts';
import type { ProviderChoice } from '../encode/execution-provider.ts';
import type { Precision } from '../encode/manifest.ts';
import { normalizeName } from '../text/normalize.ts';
import { buildIndex } from '../retrieve/index-builder.ts';
import type { HnswParams } from '../retrieve/hnsw-index.ts';
import type { IndexManifest } from '../retrieve/index-manifest.ts';

export interface BuildIndexFromKbOptions {
  kbPaths: string[];
  kbOptions?: KbLoadOptions;
  modelDir: string;
  outDir: string;
  provider?: ProviderChoice;
  deviceId?: number;
  threads?: number;
  precision?: Precision;
  hnsw?: Partial<HnswParams>;
  overwrite?: boolean;
  progress?: boolean;
  /** `index build --sole-builder`: see IndexBuildInput.soleBuilder. */
  soleBuilder?: boolean;
  log?: (line: string) => void;
}

/**
 * How the manifest records the model directory: relative to the package root when the model is
 * inside the package (the shipped ones), so the index opens from any working directory and after
 * the checkout moves; as given otherwise. openLinker resolves it back (resolveRecordedModelDir).
 */
export function recordedModelPath(modelDir: string): string {
  const fromPackage = relative(PACKAGE_ROOT, resolve(modelDir));
  return fromPackage !== '' && !fromPackage.startsWith('..') && !isAbsolute(fromPackage) ? fromPackage : modelDir;
}

/** KB files → concept store → every name encoded → index directory (what `cuilink index build` runs). */
export async function buildIndexFromKb(options: BuildIndexFromKbOptions): Promise<IndexManifest> {
  const log = options.log ?? (() => {});
  // Checked before the KB and the model load (~20 s for MEDIC); buildIndex checks again before writing.
  if (existsSync(options.outDir) && !options.overwrite) throw new InputError(`${options.outDir} already exists (pass --force to replace it)`, 'INDEX_EXISTS');
  const supplements = new Set(options.kbOptions?.supplements ?? []);
  const xrefNameSources = new Set(options.kbOptions?.xrefNameSources ?? []);
  const onFile = (path: string, format: string, n: number) =>
    log(
      supplements.has(path)
        ? `added ${n} concepts whose ids the KB lacks from ${path} (${format}, supplement)`
        : xrefNameSources.has(path)
          ? `gave ${n} concepts names from ${path} through its cross-references (${format}, xref names)`
          : `loaded ${n} concepts from ${path} (${format})`,
    );
  const store = await loadKb(options.kbPaths, { ...options.kbOptions, onFile });
  const encoder = await BiEncoder.open(options.modelDir, { provider: options.provider ?? 'auto', deviceId: options.deviceId ?? 0, threads: options.threads, precision: options.precision });
  try {
    const manifest = await buildIndex({
      concepts: store.sorted(),
      kbSources: [...options.kbPaths, ...[...supplements].map((path) => `${path} (supplement)`), ...[...xrefNameSources].map((path) => `${path} (xref names)`)],
      kbChecksum: store.checksum(),
      encoder,
      model: { path: recordedModelPath(options.modelDir), sha256: encoder.modelSha256, precision: encoder.precision },
      normalize: normalizeName,
      outDir: options.outDir,
      hnsw: options.hnsw,
      overwrite: options.overwrite,
      progress: options.progress,
      soleBuilder: options.soleBuilder,
    });
    // `kb export` counts every name as written; the index keeps one vector per distinct normalized name of a concept.
    const merged = store.nameCount - manifest.counts.names;
    log(`${store.nameCount} names in the KB → ${manifest.counts.names} encoded: ${merged} merged or dropped (names of the same concept that normalize to the same string — case, punctuation, spacing variants — or to nothing); ${manifest.counts.exactKeys} distinct normalized names in the exact-match table`);
    return manifest;
  } finally {
    await encoder.close();
  }
}
