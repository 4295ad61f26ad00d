import { join } from 'node:path';
import { readModelManifest } from '../../src/encode/manifest.ts';
import { DEFAULT_MODEL_DIR } from '../../src/link/default-index.ts';
import { ConfidenceCalibrator } from '../../src/link/confidence-calibrator.ts';
import { HierarchyPreference } from '../../src/link/hierarchy-preference.ts';
import { LinkCache } from '../../src/link/link-cache.ts';
import { parseLinkConfig } from '../../src/link/link-config.ts';
import { LinkMemo } from '../../src/link/link-memo.ts';
import { needsLooseTable } from '../../src/link/linking-stages.ts';
import { Linker, type AbbreviationFinder } from '../../src/link/linker.ts';
import { DEFAULT_CALIBRATION } from '../../src/link/open-linker.ts';
import { Reranker } from '../../src/rerank/reranker.ts';
import { CandidateRetriever } from '../../src/retrieve/candidate-retriever.ts';
import { ExactNameVectors } from '../../src/retrieve/exact-name-vectors.ts';
import { buildIndex } from '../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../src/retrieve/link-index.ts';
import { LooseMatchTable } from '../../src/retrieve/loose-match-table.ts';
import { SparseFusion } from '../../src/retrieve/sparse-fusion.ts';
import { XrefNameTable } from '../../src/retrieve/xref-name-table.ts';
import { findAbbreviationDefinitions } from '../../src/text/abbreviations.ts';
import { buildQuery, type QuerySpec } from '../../src/text/context-window.ts';
import { looseKey, unqualifiedKey } from '../../src/text/loose-key.ts';
import { normalizeName } from '../../src/text/normalize.ts';
import { WordPieceTokenizer } from '../../src/text/tokenizer.ts';
import { FIXTURE_CONCEPTS } from '../fixtures/link-concepts.ts';
import { TrigramEncoder } from './trigram-encoder.ts';

const CROSS_ENCODER_DIR = join(DEFAULT_MODEL_DIR, '..', 'crossencoder');

/**
 * The trigram stand-in encoder, but every text first goes through the shipped bi-encoder's real
 * WordPiece tokenizer as BiEncoder.encode tokenizes it: a text the tokenizer cannot take fails here
 * as it would in the real encoder.
 */
export class TokenizingTrigramEncoder extends TrigramEncoder {
  private readonly tokenizer = WordPieceTokenizer.load(join(DEFAULT_MODEL_DIR, readModelManifest(DEFAULT_MODEL_DIR).tokenizer));
  private readonly markerId: number | undefined;
  private readonly maxLength: number;

  constructor() {
    super();
    const manifest = readModelManifest(DEFAULT_MODEL_DIR);
    this.maxLength = manifest.maxLength;
    this.markerId = this.tokenizer.tokenId(manifest.query.markers[0]);
  }

  override async encode(texts: string[]): Promise<Float32Array[]> {
    for (const text of texts) this.tokenizer.encode(text, this.maxLength, this.markerId);
    return super.encode(texts);
  }
}

/** A cross-encoder stand-in: real pair tokenization (CrossEncoder.score's), trigram cosine as the logit. */
function tokenizingPairScorer(encoder: TrigramEncoder) {
  const manifest = readModelManifest(CROSS_ENCODER_DIR);
  const tokenizer = WordPieceTokenizer.load(join(CROSS_ENCODER_DIR, manifest.tokenizer));
  const markerId = tokenizer.tokenId(manifest.query.markers[0]);
  return {
    modelId: 'test-tokenizing-scorer',
    async score(pairs: { query: string; candidate: string }[]): Promise<Float32Array> {
      return Float32Array.from(pairs, ({ query, candidate }) => {
        tokenizer.encodePair(query, candidate, manifest.maxLength, markerId);
        const [a, b] = [encoder.vector(query), encoder.vector(candidate)];
        return 8 * a.reduce((sum, x, i) => sum + x * b[i]!, 0) - 4;
      });
    },
  };
}

/**
 * The smallest real linker that reads a note as the stream stage's does: FIXTURE_CONCEPTS
 * indexed under the real name normalization, every part openLinker (src/link/open-linker.ts)
 * wires from the default link config (abbreviations, loose / xref / sparse / hierarchy stages,
 * shipped calibration, link cache, context-reading reranker), and the shipped models' tokenizers;
 * only the ONNX inference is the trigram stand-in. The reranker reads a 64-character window, so
 * context windows at the note's edges are built as the context models build them.
 */
export async function openFixtureLinker(root: string): Promise<Linker> {
  const encoder = new TokenizingTrigramEncoder();
  const dir = join(root, 'fixture-index');
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder,
    model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: normalizeName, outDir: dir, progress: false,
  });
  const index = await LinkIndex.open(dir, normalizeName);
  const config = parseLinkConfig({});
  const biQuery = readModelManifest(DEFAULT_MODEL_DIR).query;
  const rerankQuery: QuerySpec = { ...readModelManifest(CROSS_ENCODER_DIR).query, mode: 'context', contextChars: 64 };
  const findAbbreviations: AbbreviationFinder = (text) => {
    const map = new Map<string, { longForm: string; start: number; end: number }>();
    for (const d of findAbbreviationDefinitions(text, { initials: config.query.abbreviationsInside })) if (!map.has(d.shortForm)) map.set(d.shortForm, { longForm: d.longForm, start: d.longFormStart, end: d.longFormEnd });
    return map;
  };
  const { cache: cacheLimits, ...linkSettings } = config;
  const xrefNames = new XrefNameTable(index.concepts, (name) => index.exact.lookup(name).length > 0, normalizeName, looseKey);
  return new Linker({
    index,
    retriever: new CandidateRetriever(index),
    encoder,
    reranker: new Reranker(tokenizingPairScorer(encoder), { includeSemanticType: true }),
    biEncoderQuery: (text, mention, override) => buildQuery(text, mention, biQuery, override),
    rerankQuery: (text, mention, override) => buildQuery(text, mention, rerankQuery, override),
    findAbbreviations,
    loose: needsLooseTable(config.query) ? new LooseMatchTable(index.concepts, looseKey, unqualifiedKey) : undefined,
    xrefNames: xrefNames.empty ? undefined : xrefNames,
    sparse: config.query.sparseWeight > 0 ? new SparseFusion(index.concepts, normalizeName, config.query.sparseWeight) : undefined,
    hierarchy: config.hierarchy.penalty > 0 ? new HierarchyPreference(index.concepts, (id) => index.indexOf(id), normalizeName, config.hierarchy) : undefined,
    calibrator: ConfidenceCalibrator.load(DEFAULT_CALIBRATION),
    config,
    memo: new LinkMemo(new LinkCache({ maxEntries: cacheLimits.maxEntries, maxBytes: cacheLimits.maxBytes }), linkSettings),
    rerankReadsContext: true,
    // What the shipped int8 models get on the CPU (openLinker): each mention's own pipeline.
    batchScope: 'mention',
    exactVectors: new ExactNameVectors(index, normalizeName),
    versions: { linkerVersion: 't', modelVersion: 'trigram', indexVersion: index.manifest.indexVersion },
    release: async () => {},
  });
}
