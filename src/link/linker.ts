import { trace, type Span } from '@opentelemetry/api';
import type { Concept } from '../kb/concept.ts';
import type { CandidateRetriever, NameLookup } from '../retrieve/candidate-retriever.ts';
import type { ExactNameVectors } from '../retrieve/exact-name-vectors.ts';
import type { LinkIndex } from '../retrieve/link-index.ts';
import type { NameEncoder } from '../retrieve/name-encoder.ts';
import type { Reranker } from '../rerank/reranker.ts';
import type { LinkConfig } from './link-config.ts';
import type { LinkCacheStats } from './link-cache.ts';
import { mentionViewKey, type LinkMemo } from './link-memo.ts';
import { rerankMentions } from './rerank-phase.ts';
import { batchGroups, type BatchScope, type MentionWork } from './mention-work.ts';
import { nameLookups, phraseLookups } from './linking-stages.ts';
import { confidenceFeatures, noteNeighbours } from './confidence-features.ts';
import { ConceptFacts } from './concept-facts.ts';
import type { ConfidenceCalibrator } from './confidence-calibrator.ts';
import type { MemoryEvidence } from './memory-evidence.ts';
import type { HierarchyPreference } from './hierarchy-preference.ts';
import type { LooseMatchTable } from '../retrieve/loose-match-table.ts';
import type { XrefNameTable } from '../retrieve/xref-name-table.ts';
import type { SparseFusion } from '../retrieve/sparse-fusion.ts';
import { expandMention, longFormsAmongMentions, looksLikeShortForm } from '../text/abbreviation-expansion.ts';
import type { AbbreviationInventory } from '../text/abbreviation-inventory.ts';
import { isLongFormOf } from '../text/abbreviations.ts';
import { compositeReadings } from '../text/composite-mentions.ts';
import type { Candidate, LinkedMention, LinkedNote, LinkingCore, MentionInput, NoteInput } from './types.ts';

/** Builds the text an encoder sees for a mention: the mention alone or inside its context window. */
export type QueryBuilder = (noteText: string, mention: MentionInput, mentionTextOverride?: string) => string;
/** In-note abbreviation definitions: short form → long form. */
export type AbbreviationFinder = (noteText: string) => ReadonlyMap<string, { longForm: string; start: number; end: number }>;

export interface LinkerParts {
  index: LinkIndex;
  retriever: CandidateRetriever;
  encoder: NameEncoder;
  reranker?: Reranker;
  biEncoderQuery: QueryBuilder;
  rerankQuery: QueryBuilder;
  findAbbreviations: AbbreviationFinder;
  /** The loose-key table behind the loose, head-noun, inheritance and unqualified lookups (each has its own switch). */
  loose?: LooseMatchTable;
  /** Names other vocabularies give the KB's concepts (config.query.xrefNames). */
  xrefNames?: XrefNameTable;
  /** Ontology tie-breaking among exact matches (config.hierarchy). */
  hierarchy?: HierarchyPreference;
  /** Hybrid dense + sparse scoring of the candidates (config.query.sparseWeight). */
  sparse?: SparseFusion;
  /** Concept ids never returned (held-out-concept evaluation); applied like a type filter. */
  exclude?: ReadonlySet<string>;
  /** Turns a link's features into the probability that it is right (LinkedMention.confidence). */
  calibrator?: ConfidenceCalibrator;
  /** Clinical short-form senses (config.query.abbreviationInventory). */
  inventory?: AbbreviationInventory;
  config: LinkConfig;
  versions: { linkerVersion: string; modelVersion: string; indexVersion: string };
  /** Manifest checksums of the loaded models (what a calibration is fit for). */
  modelChecksums?: { biEncoder: string; crossEncoder: string | null };
  /**
   * What a model batch may mix (default `note`). `note`: mentions of one note together (a mention
   * must not depend on other notes). `mention`: models with dynamic int8 quantization, which scales
   * activations per batch: each mention (each rerank pair when pruning) alone, so a link is a pure
   * function of what its models read (its text, and its context window for a model that reads
   * one). `all`: models without it (fp16/fp32): rows of a batch do not interact, so every mention
   * of the call shares batches.
   */
  batchScope?: BatchScope;
  /** The link cache in front of retrieval and reranking. */
  memo?: LinkMemo;
  /**
   * The cross-encoder reads the note around the mention (its manifest's context window): the
   * rerank query, context included, is then part of a mention's cache key.
   */
  rerankReadsContext?: boolean;
  /** Stored vectors of exact KB names, used instead of encoding (config.exactVectors). */
  exactVectors?: ExactNameVectors;
  /** The labelled-mention memory now being served (memory-watcher.ts swaps it); each batch reads it once. */
  memory?: { current(): MemoryEvidence | undefined };
  /** Releases encoder workers; called once by close(). */
  release: () => Promise<void>;
}

const tracer = trace.getTracer('cuilink.link');
/** What Linker.probe() encodes: short, fixed, no PHI. */
const PROBE_TEXT = 'fever';

/**
 * The linking core: retrieve → (cascaded) rerank → semantic-type filter → NIL → top-k. Kafka-free;
 * the CLI, the stream stage and the evaluator all call this. All mentions of the notes given are
 * encoded and reranked together. Same input and same index give the same output.
 */
export class Linker implements LinkingCore {
  private readonly parts: LinkerParts;
  private readonly allowByLabel = new Map<string, Uint8Array>();
  private stages: { lookups: NameLookup[]; phrases: ((text: string) => readonly number[])[] } | undefined;
  /** What the confidence features read of the KB (built once, when a calibration is in use). */
  private readonly facts: ConceptFacts | undefined;
  private closed: Promise<void> | undefined;

  constructor(parts: LinkerParts) {
    this.parts = parts;
    this.facts = parts.calibrator ? new ConceptFacts(parts.index.concepts) : undefined;
  }

  /** With `memoryVersion` (null without a memory): a result cached under these versions is never stale across a memory swap. */
  get versions() {
    return { ...this.parts.versions, memoryVersion: this.parts.memory?.current()?.version ?? null };
  }

  get index(): LinkIndex {
    return this.parts.index;
  }

  knowsSurface(text: string): boolean {
    return this.parts.memory?.current()?.knowsSurface(text) ?? false;
  }

  get calibrated(): boolean {
    return this.parts.calibrator !== undefined;
  }

  get config(): LinkConfig {
    return this.parts.config;
  }

  get modelChecksums(): { biEncoder: string; crossEncoder: string | null } | undefined {
    return this.parts.modelChecksums;
  }

  async linkNotes(notes: NoteInput[]): Promise<LinkedNote[]> {
    return tracer.startActiveSpan('cuilink.link', async (span) => {
      try {
        span.setAttribute('cuilink.notes', notes.length);
        // Read once: a memory swapped mid-batch serves the next batch, never half of this one; the
        // cache is keyed by the same memory version, so no entry outlives the memory it came from.
        const memory = this.parts.memory?.current();
        const memoryVersion = memory?.version ?? null;
        const work = this.prepare(notes);
        span.setAttribute('cuilink.mentions', work.length);
        const partial = this.parts.rerankReadsContext === true && memory === undefined;
        const pass = this.parts.memo?.begin(work, { ...this.parts.versions, memoryVersion: memoryVersion ?? '' }, this.parts.config.topK, partial);
        const todo = pass?.todo ?? work;
        const rerankOnly = pass?.rerankOnly ?? [];
        span.setAttribute('cuilink.mentions.linked', todo.length);
        span.setAttribute('cuilink.mentions.rerank_only', rerankOnly.length);
        if ((this.parts.batchScope ?? 'note') === 'mention') await Promise.all([this.linkEachAlone(todo, memory), ...rerankOnly.map((w) => this.rerank([w]))]);
        else await this.linkInPhases(todo, memory, rerankOnly);
        pass?.finish();
        return this.assemble(notes, work, memoryVersion);
      } finally {
        span.end();
      }
    });
  }

  /**
   * Runs one fixed short mention through each model (the bi-encoder, the cross-encoder when there
   * is one), past the link cache and the stored name vectors, without spans: resolves when both
   * answer, rejects with their error (`ENCODER_FAILED` once a session gave up restarting its
   * worker, `INFERENCE_FAILED` from a model that throws, `ENCODER_CLOSED` after close()).
   * Health probes call it on an idle stream (src/stream/linker-health-probe.ts).
   */
  async probe(): Promise<void> {
    const text = PROBE_TEXT;
    const mention: MentionInput = { id: 'probe', start: 0, end: text.length, text, label: '' };
    await this.parts.encoder.encode([this.parts.biEncoderQuery(text, mention)]);
    const concept = this.parts.index.concepts[0];
    if (this.parts.reranker && concept) await this.parts.reranker.rerank([{ query: this.parts.rerankQuery(text, mention), candidates: [concept] }]);
  }

  /** The link cache's counters; undefined when the cache is off. */
  cacheStats(): LinkCacheStats | undefined {
    return this.parts.memo?.cache.stats();
  }

  /** Drops the link cache's entries: for a swap (e.g. learned memory) that the versions do not show. */
  invalidateCache(): void {
    this.parts.memo?.invalidate();
  }

  async close(): Promise<void> {
    this.closed ??= this.parts.release();
    return this.closed;
  }

  /**
   * Every mention through each stage together: the models batch across mentions (and notes, as the
   * scope allows). `rerankOnly` mentions (retrieval from the link cache) join the rerank phase.
   */
  private async linkInPhases(todo: MentionWork[], memory: MemoryEvidence | undefined, rerankOnly: MentionWork[] = []): Promise<void> {
    await this.retrieve(todo, withSpan);
    if (memory) for (const w of todo) memory.decide(w, this.allowFor(w.mention.label), this.typeFiltered(w.mention.label));
    const reranked = rerankOnly.length > 0 ? [...todo, ...rerankOnly] : todo;
    await withSpan('cuilink.rerank', { 'cuilink.mentions': reranked.length }, () => this.rerank(reranked, memory));
    if (memory) for (const w of todo) memory.tieBreak(w);
  }

  /**
   * Each mention through its own pipeline, all at once: with per-mention model batches nothing
   * is gained by waiting for the others, so one mention's retrieval (main thread) runs while
   * another is encoded and a third reranked (one worker each). Links are those of linkInPhases.
   * The stage spans cover the pipelines' spans and overlap.
   */
  private async linkEachAlone(todo: MentionWork[], memory: MemoryEvidence | undefined): Promise<void> {
    const retrieveSpan = tracer.startSpan('cuilink.retrieve', { attributes: { 'cuilink.queries': todo.length, 'cuilink.pipelined': true } });
    const rerankSpan = tracer.startSpan('cuilink.rerank', { attributes: { 'cuilink.mentions': todo.length, 'cuilink.pipelined': true } });
    let retrieving = todo.length;
    try {
      await Promise.all(
        todo.map(async (w) => {
          await this.retrieve([w], untraced);
          if (--retrieving === 0) retrieveSpan.end();
          memory?.decide(w, this.allowFor(w.mention.label), this.typeFiltered(w.mention.label));
          await this.rerank([w], memory);
          memory?.tieBreak(w);
        }),
      );
    } finally {
      if (retrieving > 0) retrieveSpan.end();
      rerankSpan.end();
    }
  }

  private prepare(notes: NoteInput[]): MentionWork[] {
    const { config, biEncoderQuery, rerankQuery, reranker, rerankReadsContext, findAbbreviations } = this.parts;
    const work: MentionWork[] = [];
    const firstWindow = rerankReadsContext === true && config.rerank.repeatWindow === 'first';
    notes.forEach((note, noteIndex) => {
      const windows = firstWindow ? new Map<string, string>() : undefined;
      const abbreviations = config.abbreviations && note.mentions.length > 0 ? findAbbreviations(note.text) : undefined;
      const mentionLongForms = abbreviations && config.query.abbreviationsInside ? longFormsAmongMentions(note.mentions, isLongFormOf) : new Map<string, string>();
      const items: MentionWork[] = [];
      // In text order when a repeat reads its earliest occurrence's window, whatever the input order.
      for (const at of firstWindow ? textOrder(note.mentions) : note.mentions.keys()) {
        const mention = note.mentions[at]!;
        // A definition's own long form is not an abbreviation use; only later `SF` mentions are expanded.
        const expansion = abbreviations ? expandMention(mention, abbreviations, mentionLongForms, config.query.abbreviationsInside) : undefined;
        const expand = expansion?.text;
        const surface = expand ?? mention.text;
        const query = biEncoderQuery(note.text, mention, expansion?.partial === true ? undefined : expand);
        const exactTexts = expand === undefined ? [mention.text] : [expand, mention.text];
        let rerankText = reranker ? rerankQuery(note.text, mention, expand) : '';
        if (windows) {
          // Keyed as the link cache keys the mention: a repeat reads the first window, and the cache links it once.
          const seen = mentionViewKey({ mention, query, exactTexts });
          rerankText = windows.get(seen) ?? rerankText;
          if (!windows.has(seen)) windows.set(seen, rerankText);
        }
        items[at] = {
          noteIndex,
          mention,
          expandedFrom: expand === undefined ? null : mention.text,
          exactTexts,
          readings: config.query.composite ? compositeReadings(surface) : [],
          senses: expand === undefined && this.parts.inventory && looksLikeShortForm(mention.text) ? this.parts.inventory.lookup(mention.text) : [],
          // A short form written out inside a longer mention helps the name lookup; the encoder reads the mention as written (tune split).
          query,
          rerankQuery: rerankText,
          contextKey: rerankReadsContext ? rerankText : '',
          hits: [],
          scores: [],
          reranked: false,
          memoryDecided: false,
          memorySupport: 0,
        };
      }
      work.push(...items);
    });
    return work;
  }

  private async retrieve(work: MentionWork[], span: typeof withSpan): Promise<void> {
    const { encoder, retriever, config } = this.parts;
    const vectors = this.storedVectors(work);
    const missing = work.flatMap((w, i) => (vectors[i] === undefined ? [i] : []));
    const encoded = await span('cuilink.encode', { 'cuilink.queries': missing.length }, () =>
      // Batched per note (or per mention with int8 models): dynamic int8 scales activations
      // per batch, and a mention's vector must not depend on the other notes of a micro-batch.
      encoder.encode(missing.map((i) => work[i]!.query), this.groups(missing.map((i) => work[i]!))),
    );
    missing.forEach((i, j) => (vectors[i] = encoded[j]));
    await span('cuilink.retrieve', { 'cuilink.queries': work.length }, async () => {
      const { sparse } = this.parts;
      const { lookups, phrases } = this.lookupStages();
      work.forEach((w, i) => {
        const allow = this.allowFor(w.mention.label);
        const retrieved = retriever.retrieve(w.exactTexts, vectors[i]!, { k: sparse ? config.query.sparsePool * config.retrieveK : config.retrieveK, allow, lookups, expanded: w.expandedFrom !== null, readings: w.readings, readingLookups: phrases, senses: w.senses, senseLookups: phrases });
        const hits = sparse ? sparse.fuse(w.exactTexts, retrieved).slice(0, config.retrieveK) : retrieved;
        const preferred = this.parts.hierarchy ? this.parts.hierarchy.apply(w.exactTexts, hits) : { hits, scores: hits.map((h) => h.score) };
        w.hits = preferred.hits;
        w.scores = preferred.scores;
        w.vector = vectors[i];
      });
    });
  }

  /** Model batch groups of the given mentions (see LinkerParts.batchScope); undefined: one group. */
  private groups(work: readonly MentionWork[]): number[] | undefined {
    return batchGroups(work, this.parts.batchScope ?? 'note');
  }

  /** Index vectors of mentions that are exactly one concept's name, when that cannot change a top-1. */
  private storedVectors(work: MentionWork[]): (Float32Array | undefined)[] {
    const { exactVectors, config, reranker } = this.parts;
    const policy = reranker ? config.rerank.policy : 'never';
    // With `always`, the reranker reorders even a unique exact hit against the dense tail; with
    // `inexact`, a long form's hit (`abbreviation`, exact only when the short form is a name too).
    if (!exactVectors || !config.exactVectors || policy === 'always') return work.map(() => undefined);
    return work.map((w) => (policy === 'inexact' && w.expandedFrom !== null ? undefined : exactVectors.vectorFor(w.exactTexts, this.allowFor(w.mention.label))));
  }

  private async rerank(work: MentionWork[], memory?: MemoryEvidence): Promise<void> {
    const { reranker, config, index } = this.parts;
    if (!reranker) return;
    await rerankMentions(work, {
      reranker,
      config,
      index,
      batchScope: this.parts.batchScope ?? 'note',
      keepBefore: this.parts.memo !== undefined && this.parts.rerankReadsContext === true,
      tieBreakSlack: memory?.tieBreakSlack ?? 0,
    });
  }

  private assemble(notes: NoteInput[], work: MentionWork[], memoryVersion: string | null): LinkedNote[] {
    const { config, index, versions, calibrator } = this.parts;
    const linkedAt = Date.now();
    const out: LinkedNote[] = notes.map((note) => ({ noteId: note.noteId, mentions: [], ...versions, memoryVersion, linkedAt }));
    const texts: string[][] = notes.map(() => []);
    const weight = config.rerank.weight;
    for (const w of work) {
      const candidates: Candidate[] = w.hits.slice(0, config.topK).map((hit, i) => {
        const concept: Concept = index.concepts[hit.conceptIndex]!;
        // A looser name match ranks in the lookup tier (score 1 there); what it reports is its real similarity.
        const mixed = hit.rerankProbability === undefined ? 0 : weight;
        const honest = hit.lexical && !hit.exact ? (1 - mixed) * (1 - hit.similarity) : 0;
        return { conceptId: concept.id, name: concept.name, semanticTypes: concept.semanticTypes, score: w.scores[i]! - honest, retrievalScore: hit.lexical ? hit.similarity : hit.score, exact: hit.exact, via: hit.via };
      });
      // A concept outside the KB that the memory decided (memory-evidence.ts, outsideKb) leads the list.
      if (w.memoryConcept) candidates.splice(0, candidates.length, w.memoryConcept, ...candidates.slice(0, config.topK - 1));
      const best = candidates[0];
      const linked: LinkedMention = {
        mentionId: w.mention.id,
        start: w.mention.start,
        end: w.mention.end,
        label: w.mention.label,
        conceptId: best?.conceptId ?? null,
        conceptName: best?.name ?? null,
        semanticTypes: best?.semanticTypes ?? [],
        score: best?.score ?? 0,
        confidence: null,
        via: best === undefined ? null : w.memoryDecided ? 'memory' : best.via,
        nil: best === undefined,
        reranked: w.reranked,
        candidates,
        expandedFrom: w.expandedFrom,
        memoryDecided: w.memoryDecided,
        memorySupport: w.memorySupport,
      };
      out[w.noteIndex]!.mentions.push(linked);
      texts[w.noteIndex]!.push(w.mention.text);
    }
    // Confidence reads the note's other links, so it comes once every mention of the note has one.
    out.forEach((note, n) => {
      const neighbours = calibrator ? noteNeighbours(note.mentions.map((linked, i) => ({ linked, text: texts[n]![i]! }))) : [];
      note.mentions.forEach((linked, i) => {
        const best = linked.candidates[0];
        if (best === undefined) return;
        if (calibrator) Object.assign(linked, calibrator.assess(confidenceFeatures(linked, texts[n]![i]!, this.facts, neighbours[i])));
        if (best.score < config.nil.threshold || (linked.confidence !== null && linked.confidence < config.nil.confidence) || (linked.inKb != null && linked.inKb < config.nil.inKb)) {
          linked.nil = true;
          linked.conceptId = null;
          linked.conceptName = null;
          linked.semanticTypes = [];
        }
      });
    });
    return out;
  }

  /** The name-lookup cascade after the exact table, in LINKING_STAGES order, built once. */
  private lookupStages(): { lookups: NameLookup[]; phrases: ((text: string) => readonly number[])[] } {
    const { index, loose, xrefNames, config } = this.parts;
    const tables = { exact: index.exact, loose, xrefNames };
    this.stages ??= { lookups: nameLookups(tables, config.query), phrases: phraseLookups(tables, config.query.loose) };
    return this.stages;
  }

  /** Whether the config restricts the semantic types of an NER label's concepts (a held-out concept is no such restriction). */
  private typeFiltered(label: string): boolean {
    return Object.hasOwn(this.parts.config.typeFilter, label) && this.parts.config.typeFilter[label] !== undefined;
  }

  /** Concepts whose semantic types the config allows for an NER label (undefined: no filter). */
  private allowFor(label: string): ((conceptIndex: number) => boolean) | undefined {
    // Own keys only: an NER label such as 'constructor' must not find Object's members.
    const allowed = Object.hasOwn(this.parts.config.typeFilter, label) ? this.parts.config.typeFilter[label] : undefined;
    const exclude = this.parts.exclude;
    if (!allowed && (exclude === undefined || exclude.size === 0)) return undefined;
    let mask = this.allowByLabel.get(label);
    if (!mask) {
      const types = allowed ? new Set(allowed) : undefined;
      mask = Uint8Array.from(this.parts.index.concepts, (c) => ((!types || c.semanticTypes.some((t) => types.has(t))) && !exclude?.has(c.id) ? 1 : 0));
      this.allowByLabel.set(label, mask);
    }
    const m = mask;
    return (conceptIndex) => m[conceptIndex] === 1;
  }

}

/** Indexes of the mentions by start offset (input order among equal starts). */
function textOrder(mentions: readonly MentionInput[]): number[] {
  return mentions.map((_, i) => i).sort((a, b) => mentions[a]!.start - mentions[b]!.start || a - b);
}

/** For a mention's own pipeline: its stages are covered by the call's overlapping stage spans. */
async function untraced<T>(_name: string, _attributes: Record<string, number>, fn: () => Promise<T>): Promise<T> {
  return fn();
}

async function withSpan<T>(name: string, attributes: Record<string, number>, fn: () => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span: Span) => {
    try {
      return await fn();
    } finally {
      span.end();
    }
  });
}
