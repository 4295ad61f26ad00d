import { trace, type Span } from '@opentelemetry/api';
import type { Concept } from '../kb/concept.ts';
import type { CandidateRetriever, ConceptHit } from '../retrieve/candidate-retriever.ts';
import type { LinkIndex } from '../retrieve/link-index.ts';
import type { NameEncoder } from '../retrieve/name-encoder.ts';
import type { Reranker } from '../rerank/reranker.ts';
import type { LinkConfig } from './link-config.ts';
import type { HierarchyPreference } from './hierarchy-preference.ts';
import type { LooseMatchTable } from '../retrieve/loose-match-table.ts';
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
  /** Second-chance name table (config.query.loose). */
  loose?: LooseMatchTable;
  /** Ontology tie-breaking among exact matches (config.hierarchy). */
  hierarchy?: HierarchyPreference;
  /** Hybrid dense + sparse scoring of the candidates (config.query.sparseWeight). */
  sparse?: SparseFusion;
  /** Clinical short-form senses (config.query.abbreviationInventory). */
  inventory?: AbbreviationInventory;
  config: LinkConfig;
  versions: { linkerVersion: string; modelVersion: string; indexVersion: string };
  /** Releases encoder workers; called once by close(). */
  release: () => Promise<void>;
}

interface MentionWork {
  noteIndex: number;
  mention: MentionInput;
  expandedFrom: string | null;
  exactTexts: string[];
  /** Distributed readings of a composite mention (extra name lookups). */
  readings: string[];
  /** Inventory senses of an undefined short form. */
  senses: readonly string[];
  query: string;
  hits: ConceptHit[];
  scores: number[];
  reranked: boolean;
}

const tracer = trace.getTracer('cuilink.link');

/**
 * The linking core: retrieve → (cascaded) rerank → semantic-type filter → NIL → top-k. Kafka-free;
 * the CLI, the stream stage and the evaluator all call this. All mentions of the notes given are
 * encoded and reranked together. Same input and same index give the same output.
 */
export class Linker implements LinkingCore {
  private readonly parts: LinkerParts;
  private readonly allowByLabel = new Map<string, Uint8Array>();
  private closed: Promise<void> | undefined;

  constructor(parts: LinkerParts) {
    this.parts = parts;
  }

  get versions() {
    return this.parts.versions;
  }

  get index(): LinkIndex {
    return this.parts.index;
  }

  get config(): LinkConfig {
    return this.parts.config;
  }

  async linkNotes(notes: NoteInput[]): Promise<LinkedNote[]> {
    return tracer.startActiveSpan('cuilink.link', async (span) => {
      try {
        span.setAttribute('cuilink.notes', notes.length);
        const work = this.prepare(notes);
        span.setAttribute('cuilink.mentions', work.length);
        await this.retrieve(work);
        await this.rerank(notes, work);
        return this.assemble(notes, work);
      } finally {
        span.end();
      }
    });
  }

  async close(): Promise<void> {
    this.closed ??= this.parts.release();
    return this.closed;
  }

  private prepare(notes: NoteInput[]): MentionWork[] {
    const { config, biEncoderQuery, findAbbreviations } = this.parts;
    const work: MentionWork[] = [];
    notes.forEach((note, noteIndex) => {
      const abbreviations = config.abbreviations && note.mentions.length > 0 ? findAbbreviations(note.text) : undefined;
      const mentionLongForms = abbreviations && config.query.abbreviationsInside ? longFormsAmongMentions(note.mentions, isLongFormOf) : new Map<string, string>();
      for (const mention of note.mentions) {
        // A definition's own long form is not an abbreviation use; only later `SF` mentions are expanded.
        const expansion = abbreviations ? expandMention(mention, abbreviations, mentionLongForms, config.query.abbreviationsInside) : undefined;
        const expand = expansion?.text;
        const surface = expand ?? mention.text;
        work.push({
          noteIndex,
          mention,
          expandedFrom: expand === undefined ? null : mention.text,
          exactTexts: expand === undefined ? [mention.text] : [expand, mention.text],
          readings: config.query.composite ? compositeReadings(surface) : [],
          senses: expand === undefined && this.parts.inventory && looksLikeShortForm(mention.text) ? this.parts.inventory.lookup(mention.text) : [],
          // A short form written out inside a longer mention helps the name lookup; the encoder reads the mention as written (tune split).
          query: biEncoderQuery(note.text, mention, expansion?.partial === true ? undefined : expand),
          hits: [],
          scores: [],
          reranked: false,
        });
      }
    });
    return work;
  }

  private async retrieve(work: MentionWork[]): Promise<void> {
    const { encoder, retriever, config } = this.parts;
    const vectors = await withSpan('cuilink.encode', { 'cuilink.queries': work.length }, () =>
      // Batched per note: a mention's vector must not depend on the other notes of a micro-batch.
      encoder.encode(work.map((w) => w.query), work.map((w) => w.noteIndex)),
    );
    await withSpan('cuilink.retrieve', { 'cuilink.queries': work.length }, async () => {
      work.forEach((w, i) => {
        const allow = this.allowFor(w.mention.label);
        const { sparse } = this.parts;
        const retrieved = retriever.retrieve(w.exactTexts, vectors[i]!, { k: sparse ? config.query.sparsePool * config.retrieveK : config.retrieveK, allow, loose: this.parts.loose, headNouns: config.query.headNouns, readings: w.readings, senses: w.senses });
        const hits = sparse ? sparse.fuse(w.exactTexts, retrieved).slice(0, config.retrieveK) : retrieved;
        const preferred = this.parts.hierarchy ? this.parts.hierarchy.apply(w.exactTexts, hits) : { hits, scores: hits.map((h) => h.score) };
        w.hits = preferred.hits;
        w.scores = preferred.scores;
      });
    });
  }

  private needsRerank(w: MentionWork): boolean {
    const { policy, margin } = this.parts.config.rerank;
    if (policy === 'never' || w.hits.length < 2) return false;
    if (policy === 'always') return true;
    const [first, second] = w.hits as [ConceptHit, ConceptHit];
    if (first.exact && !second.exact) return false;
    return first.score - second.score < margin || (first.exact && second.exact);
  }

  private async rerank(notes: NoteInput[], work: MentionWork[]): Promise<void> {
    const { reranker, config, rerankQuery, index } = this.parts;
    if (!reranker) return;
    const chosen = work.filter((w) => this.needsRerank(w));
    if (chosen.length === 0) return;
    await withSpan('cuilink.rerank', { 'cuilink.mentions': chosen.length }, async () => {
      const items = chosen.map((w) => ({
        query: rerankQuery(notes[w.noteIndex]!.text, w.mention, w.expandedFrom === null ? undefined : w.exactTexts[0]),
        candidates: w.hits.slice(0, config.rerank.candidates).map((h) => index.concepts[h.conceptIndex]!),
      }));
      const probabilities = await reranker.rerank(items, chosen.map((w) => w.noteIndex));
      const weight = config.rerank.weight;
      chosen.forEach((w, i) => {
        const p = probabilities[i]!;
        // w.scores, not hit.score: the retrieval score after the hierarchy preference.
        const head = w.hits.slice(0, p.length).map((hit, j) => ({ hit, score: weight * p[j]! + (1 - weight) * w.scores[j]! }));
        head.sort((a, b) => b.score - a.score || a.hit.conceptIndex - b.hit.conceptIndex);
        const tail = w.hits.slice(p.length);
        const floor = head.length > 0 ? head[head.length - 1]!.score : 0;
        w.hits = [...head.map((h) => h.hit), ...tail];
        // Unreranked tail candidates keep their order below the reranked head.
        w.scores = [...head.map((h) => h.score), ...tail.map((h, j) => Math.min(floor, w.scores[p.length + j]!))];
        w.reranked = true;
      });
    });
  }

  private assemble(notes: NoteInput[], work: MentionWork[]): LinkedNote[] {
    const { config, index, versions } = this.parts;
    const linkedAt = Date.now();
    const out: LinkedNote[] = notes.map((note) => ({ noteId: note.noteId, mentions: [], ...versions, linkedAt }));
    for (const w of work) {
      const candidates: Candidate[] = w.hits.slice(0, config.topK).map((hit, i) => {
        const concept: Concept = index.concepts[hit.conceptIndex]!;
        return { conceptId: concept.id, name: concept.name, semanticTypes: concept.semanticTypes, score: w.scores[i]!, retrievalScore: hit.score, exact: hit.exact };
      });
      const best = candidates[0];
      const nil = best === undefined || best.score < config.nil.threshold;
      const linked: LinkedMention = {
        mentionId: w.mention.id,
        start: w.mention.start,
        end: w.mention.end,
        label: w.mention.label,
        conceptId: nil ? null : best.conceptId,
        conceptName: nil ? null : best.name,
        semanticTypes: nil ? [] : best.semanticTypes,
        score: best?.score ?? 0,
        nil,
        reranked: w.reranked,
        candidates,
        expandedFrom: w.expandedFrom,
      };
      out[w.noteIndex]!.mentions.push(linked);
    }
    return out;
  }

  /** Concepts whose semantic types the config allows for an NER label (undefined: no filter). */
  private allowFor(label: string): ((conceptIndex: number) => boolean) | undefined {
    const allowed = this.parts.config.typeFilter[label];
    if (!allowed) return undefined;
    let mask = this.allowByLabel.get(label);
    if (!mask) {
      const types = new Set(allowed);
      mask = Uint8Array.from(this.parts.index.concepts, (c) => (c.semanticTypes.some((t) => types.has(t)) ? 1 : 0));
      this.allowByLabel.set(label, mask);
    }
    const m = mask;
    return (conceptIndex) => m[conceptIndex] === 1;
  }
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
