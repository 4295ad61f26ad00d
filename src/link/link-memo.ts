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
  hits: ConceptHit[];
  scores: number[];
  reranked: boolean;
  /** What a labelled-mention memory decided (src/link/memory-evidence.ts); cached with the rest. */
  memoryDecided: boolean;
  memorySupport: number;
  memoryConcept?: unknown;
}

export interface MemoPass<T> {
  /** Mentions the models must link: neither cached nor a repeat of another in this call. */
  todo: T[];
  /** Stores the linked `todo` mentions and copies them to their repeats. */
  finish(): void;
}

/**
 * Puts a LinkCache in front of the linker for context-free models. A key is the scope (a hash of
 * every field of the linker's versions object, the link config's hash and any extra key parts,
 * e.g. a memory version) plus the NER label, the query the models see and, for an expanded
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

  /** `keep`: candidates stored per mention (the linker's topK: it never reads past them). */
  begin<T extends MemoWork>(work: T[], versions: Readonly<Record<string, string>>, keep = Infinity): MemoPass<T> {
    if (!this.cache.enabled) return { todo: work, finish: () => {} };
    const scope = this.scope(versions);
    const todo: T[] = [];
    const leaders = new Map<string, T>();
    const repeats: [T, T][] = [];
    for (const w of work) {
      const key = `${scope}\u0000${w.mention.label}\u0000${w.query}\u0000${w.exactTexts.join('\u0001')}`;
      const leader = leaders.get(key);
      if (leader !== undefined) {
        repeats.push([w, leader]);
        continue;
      }
      const cached = this.cache.get(key);
      if (cached !== undefined) {
        fill(w, cached);
        continue;
      }
      leaders.set(key, w);
      todo.push(w);
    }
    this.cache.countRepeats(repeats.length);
    return {
      todo,
      finish: () => {
        for (const [key, w] of leaders) this.cache.set(key, { hits: w.hits.slice(0, keep), scores: w.scores.slice(0, keep), reranked: w.reranked, memoryDecided: w.memoryDecided, memorySupport: w.memorySupport, memoryConcept: w.memoryConcept });
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
