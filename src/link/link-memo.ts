import { createHash } from 'node:crypto';
import type { ConceptHit } from '../retrieve/candidate-retriever.ts';
import type { CachedLink, LinkCache } from './link-cache.ts';

/** A query spec (a model manifest's `query`): does the model see anything of the note besides the mention? */
export function isContextFree(query: { mode: 'mention' | 'context'; contextChars: number }): boolean {
  return query.mode === 'mention' || query.contextChars === 0;
}

/** JSON with object keys sorted, so equal configs hash equally whatever their key order. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The fields of a linker's per-mention work the memo reads and fills. */
export interface MemoWork {
  mention: { text: string; label: string };
  /** The bi-encoder query: with context-free models, the (expanded) mention text. */
  query: string;
  expandedFrom: string | null;
  /** The texts the exact and loose name lookups read (an expanded short form first): part of the key. */
  exactTexts: readonly string[];
  /** What else of the note a model reads (the cross-encoder's context window), '' for context-free models: part of the key. */
  contextKey: string;
  hits: ConceptHit[];
  scores: number[];
  reranked: boolean;
  /** What a labelled-mention memory decided (src/link/memory-evidence.ts); cached with the rest. */
  memoryDecided: boolean;
  memorySupport: number;
  memoryConcept?: unknown;
  /** Hits and scores as they were before the cross-encoder reordered them (set by the linker when it reranks). */
  beforeRerank?: { hits: ConceptHit[]; scores: number[] };
}

/** What the models see of a mention apart from any note window: its NER label, query and lookup texts (a cache key part, and what makes two mentions of a note repeats). */
export function mentionViewKey(w: { mention: { label: string }; query: string; exactTexts: readonly string[] }): string {
  return `${w.mention.label}\u0000${w.query}\u0000${w.exactTexts.join('\u0001')}`;
}

export interface MemoPass<T> {
  /** Mentions the models must link: neither cached nor a repeat of another in this call. */
  todo: T[];
  /** Mentions whose state before reranking came from the cache: only the reranker must run (`partial`). */
  rerankOnly: T[];
  /** Stores the linked `todo` mentions and copies them to their repeats. */
  finish(): void;
}

/**
 * Puts a LinkCache in front of the linker. A key is the scope (a hash of
 * every field of the linker's versions object, the link config's hash and any extra key parts,
 * e.g. a memory version) plus the NER label, the query the models see, what else of the note a
 * model reads (a context-reading cross-encoder's window) and, for an expanded
 * abbreviation or composite, the texts the name lookups read (they can differ from the query). The scope is recomputed on
 * every call, so a versions object that changes (an index, model or memory swap) can never be
 * answered from entries made under the old one. Repeats within one call are linked once.
 */
export class LinkMemo {
  readonly cache: LinkCache;
  private readonly configHash: string;
  private readonly extraKeyParts: () => Readonly<Record<string, string>>;

  constructor(cache: LinkCache, config: unknown, extraKeyParts: () => Readonly<Record<string, string>> = () => ({})) {
    this.cache = cache;
    this.configHash = createHash('sha256').update(stableStringify(config)).digest('hex');
    this.extraKeyParts = extraKeyParts;
  }

  /** The key prefix for the current versions (exported for tests). */
  scope(versions: Readonly<Record<string, string>>): string {
    return createHash('sha256').update(stableStringify({ versions, config: this.configHash, extra: this.extraKeyParts() })).digest('base64');
  }

  /** Drops every entry: for a swap that the versions object does not show. */
  invalidate(): void {
    this.cache.clear();
  }

  /**
   * `keep`: candidates stored per finished mention (the linker's topK: it never reads past them).
   * `partial`: a mention whose cross-encoder reads context is cached in two stages. Under the
   * mention's own key, either its finished link (it was not reranked: the window cannot change it)
   * or its state before reranking (`awaitsRerank`); under that key plus the window, the finished
   * link. A mention seen before in another window then skips encoding and retrieval: `rerankOnly`.
   * Off while a memory is served (its tie-break reads votes the cache does not keep).
   */
  begin<T extends MemoWork>(work: T[], versions: Readonly<Record<string, string>>, keep = Infinity, partial = false): MemoPass<T> {
    if (!this.cache.enabled) return { todo: work, rerankOnly: [], finish: () => {} };
    const scope = this.scope(versions);
    const todo: T[] = [];
    const rerankOnly: T[] = [];
    const leaders = new Map<string, { w: T; mentionKey: string }>();
    const repeats: [T, T][] = [];
    for (const w of work) {
      const mentionKey = `${scope}\u0000${mentionViewKey(w)}`;
      const key = `${mentionKey}\u0000${w.contextKey}`;
      const leader = leaders.get(key);
      if (leader !== undefined) {
        repeats.push([w, leader.w]);
        continue;
      }
      const staged = partial && w.contextKey !== '';
      const cached = staged ? this.cache.get(mentionKey, false) : this.cache.get(key);
      const done = cached?.awaitsRerank ? this.cache.get(key, false) : cached;
      if (staged) this.cache.countLookup(done !== undefined);
      if (done !== undefined) {
        fill(w, done);
        continue;
      }
      if (cached?.awaitsRerank) {
        fill(w, cached);
        rerankOnly.push(w);
      } else {
        todo.push(w);
      }
      leaders.set(key, { w, mentionKey });
    }
    this.cache.countRepeats(repeats.length);
    this.cache.countRerankOnly(rerankOnly.length);
    const finished = (w: T): CachedLink => ({ hits: w.hits.slice(0, keep), scores: w.scores.slice(0, keep), reranked: w.reranked, memoryDecided: w.memoryDecided, memorySupport: w.memorySupport, memoryConcept: w.memoryConcept });
    return {
      todo,
      rerankOnly,
      finish: () => {
        for (const [key, { w, mentionKey }] of leaders) {
          const staged = partial && w.contextKey !== '';
          if (!staged) this.cache.set(key, finished(w));
          else if (!w.reranked) this.cache.set(mentionKey, finished(w));
          else {
            // The whole list before reranking: the reranked top-k can draw on any of it.
            if (w.beforeRerank) this.cache.set(mentionKey, { ...w.beforeRerank, reranked: false, awaitsRerank: true, memoryDecided: w.memoryDecided, memorySupport: w.memorySupport, memoryConcept: w.memoryConcept });
            this.cache.set(key, finished(w));
          }
        }
        for (const [w, leader] of repeats) fill(w, leader);
      },
    };
  }
}

function fill(w: MemoWork, from: CachedLink): void {
  w.hits = from.hits.slice();
  w.scores = from.scores.slice();
  w.reranked = from.reranked;
  w.memoryDecided = from.memoryDecided ?? false;
  w.memorySupport = from.memorySupport ?? 0;
  w.memoryConcept = from.memoryConcept;
}
