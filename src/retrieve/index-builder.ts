import { mkdirSync, renameSync, rmSync, existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { syncDirectory, syncFile, writeFileDurably } from '../kb/durable-file.ts';
import type { Concept } from '../kb/concept.ts';
import { InputError } from '../kb/errors.ts';
import { writeConceptJsonlFile } from '../kb/jsonl-writer.ts';
import { ExactMatchTable } from './exact-match-table.ts';
import { HnswIndex, DEFAULT_HNSW_PARAMS, type HnswParams } from './hnsw-index.ts';
import { INDEX_FORMAT_VERSION, INDEX_MANIFEST_FILE, indexFileDigests, type IndexManifest } from './index-manifest.ts';
import { NameTable } from './name-table.ts';
import type { NameEncoder } from './name-encoder.ts';
import { BuildProgress } from './build-progress.ts';
import { builderTag, markBuilder, removeAbandonedBuilds, removeAbandonedReplaced, unmarkBuilder } from './abandoned-builds.ts';

export interface IndexBuildInput {
  concepts: readonly Concept[];
  kbSources: string[];
  kbChecksum: string;
  encoder: NameEncoder;
  model: { path: string; sha256: string; precision: string };
  normalize: (s: string) => string;
  outDir: string;
  hnsw?: Partial<HnswParams>;
  /** Names per encode call; the next chunk encodes (in the encoder's worker) while this one is inserted. */
  chunkSize?: number;
  overwrite?: boolean;
  progress?: boolean;
  /** No other process on any host builds outDir meanwhile: other hosts' staging and moved-aside directories are abandoned too (removeAbandonedBuilds, removeAbandonedReplaced). */
  soleBuilder?: boolean;
}

/** The old index moved aside while a new one replaces it (removeAbandonedReplaced). */
const REPLACED_MARK = '.replaced-';

/**
 * Builds a versioned index directory: concepts, every name, their vectors in HNSW, and the exact
 * normalized-name table (rebuilt at load from the concepts). Written under a temporary name and
 * renamed at the end, so a reader never sees a half-built index.
 */
export async function buildIndex(input: IndexBuildInput): Promise<IndexManifest> {
  const started = performance.now();
  if (existsSync(input.outDir) && !input.overwrite) {
    throw new InputError(`${input.outDir} already exists (pass --force to replace it)`, 'INDEX_EXISTS');
  }
  if (input.concepts.length === 0) throw new InputError('the knowledge base has no concepts', 'EMPTY_KB');
  const params: HnswParams = { ...DEFAULT_HNSW_PARAMS, ...input.hnsw };
  const staging = `${input.outDir}.building-${builderTag()}`;
  removeAbandonedBuilds(input.outDir, '.building-', { soleBuilder: input.soleBuilder });
  removeAbandonedReplaced(input.outDir, REPLACED_MARK, { soleBuilder: input.soleBuilder });
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  markBuilder(staging);
  try {
    const names = NameTable.fromConcepts(input.concepts, input.normalize);
    const exact = ExactMatchTable.fromConcepts(input.concepts, input.normalize);
    const index = HnswIndex.create(input.encoder.dims, names.size, params);
    const chunkSize = input.chunkSize ?? 1024;
    const progress = input.progress === false ? undefined : new BuildProgress('encoding + indexing names', names.size);

    let encodeSeconds = 0;
    const encodeChunk = async (from: number) => {
      const t0 = performance.now();
      const vectors = await input.encoder.encode(names.names.slice(from, from + chunkSize));
      encodeSeconds += (performance.now() - t0) / 1000;
      return vectors;
    };
    let pending = names.size > 0 ? encodeChunk(0) : undefined;
    for (let from = 0; pending !== undefined; from += chunkSize) {
      const vectors = await pending;
      pending = from + chunkSize < names.size ? encodeChunk(from + chunkSize) : undefined;
      vectors.forEach((vector, i) => index.add(vector, from + i));
      progress?.advance(vectors.length);
    }
    progress?.finish();

    // Every file flushed before the rename: a directory with a manifest is taken as built (the
    // default index is checked by nothing else), and a power cut must not leave one cut short.
    index.save(join(staging, 'names.hnsw'));
    writeFileDurably(join(staging, 'names.json'), JSON.stringify({ names: names.names, conceptIndexOf: Array.from(names.conceptIndexOf) }));
    await writeConceptJsonlFile(input.concepts, join(staging, 'concepts.jsonl'));
    syncFile(join(staging, 'concepts.jsonl'));

    const files = { concepts: 'concepts.jsonl', names: 'names.json', hnsw: 'names.hnsw' };
    const checksums = indexFileDigests(staging, files);
    const totalSeconds = (performance.now() - started) / 1000;
    const createdAt = new Date().toISOString();
    const manifest: IndexManifest = {
      formatVersion: INDEX_FORMAT_VERSION,
      indexVersion: `${input.kbChecksum.slice(0, 12)}-${input.model.sha256.slice(0, 12)}-${createdAt.replace(/[-:.TZ]/g, '').slice(0, 14)}`,
      createdAt,
      kb: { sources: input.kbSources.map((s) => basename(s)), checksum: input.kbChecksum, concepts: input.concepts.length },
      model: { id: input.encoder.modelId, path: input.model.path, sha256: input.model.sha256, precision: input.model.precision, dims: input.encoder.dims },
      hnsw: { space: 'ip', ...params },
      counts: { concepts: input.concepts.length, names: names.size, exactKeys: exact.size },
      timings: { totalSeconds, encodeSeconds, namesPerSecond: names.size / Math.max(encodeSeconds, 1e-9) },
      files,
      checksums,
    };
    writeFileDurably(join(staging, INDEX_MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
    unmarkBuilder(staging);
    syncDirectory(staging);
    // The old index is moved aside before the new one is moved in and deleted only after: two
    // renames leave no moment with a half-deleted directory at outDir, and a crash between them
    // leaves the old index whole beside it.
    const replaced = `${input.outDir}${REPLACED_MARK}${builderTag()}`;
    if (existsSync(input.outDir)) renameSync(input.outDir, replaced);
    renameSync(staging, input.outDir);
    syncDirectory(dirname(input.outDir));
    rmSync(replaced, { recursive: true, force: true });
    return manifest;
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}
