import { metrics, type Counter, type Meter } from '@opentelemetry/api';
import type { ConceptHit } from '../retrieve/candidate-retriever.ts';

/** What the linker keeps of one mention once retrieval and reranking are done. */
export interface CachedLink {
  readonly hits: readonly ConceptHit[];
  readonly scores: readonly number[];
  readonly reranked: boolean;
  /** What a labelled-mention memory decided, when one is served (its version is in the key). */
  readonly memoryDecided?: boolean;
  readonly memorySupport?: number;
  readonly memoryConcept?: unknown;
  /** The state before a context-reading cross-encoder: the finished link is keyed by the window too (link-memo.ts). */
  readonly awaitsRerank?: boolean;
}

export interface LinkCacheLimits {
  /** Most entries held; 0 turns the cache off. */
  maxEntries: number;
  /** Most (estimated) bytes held by keys and values. */
  maxBytes: number;
}

export interface LinkCacheStats {
  hits: number;
  misses: number;
  evictions: number;
  entries: number;
  bytes: number;
  /** hits / (hits + misses); 0 before the first lookup. */
  hitRatio: number;
  /** Mentions whose retrieval came from the cache and only the context-reading reranker ran. */
  rerankOnly: number;
}

// Rough V8 sizes: a string costs ~2 bytes a character plus a header; a hit object ~48 bytes.
const ENTRY_OVERHEAD = 120;
const BYTES_PER_HIT = 64;

function sizeOf(key: string, value: CachedLink): number {
  return ENTRY_OVERHEAD + 2 * key.length + value.hits.length * BYTES_PER_HIT;
}

/**
 * A bounded LRU of finished mention links, keyed by everything a link depends on
 * (src/link/link-memo.ts builds the keys). Bounded by entries and by estimated bytes; the
 * least recently used entry goes first. Counters are OpenTelemetry instruments
 * (`cuilink.link.cache.*`) and plain numbers for benchmarks. Keys hold mention text, so nothing
 * here ever logs or labels a key.
 */
export class LinkCache {
  readonly limits: LinkCacheLimits;
  private readonly map = new Map<string, CachedLink>();
  private bytes = 0;
  private readonly counts = { hits: 0, misses: 0, evictions: 0, rerankOnly: 0 };
  private readonly hitCounter: Counter;
  private readonly missCounter: Counter;
  private readonly evictionCounter: Counter;

  constructor(limits: LinkCacheLimits, meter: Meter = metrics.getMeter('cuilink.link')) {
    this.limits = limits;
    this.hitCounter = meter.createCounter('cuilink.link.cache.hits', { description: 'Mentions answered from the link cache' });
    this.missCounter = meter.createCounter('cuilink.link.cache.misses', { description: 'Mentions the link cache did not hold (linked by the models)' });
    this.evictionCounter = meter.createCounter('cuilink.link.cache.evictions', { description: 'Link cache entries evicted by the entry or byte bound' });
    meter.createObservableGauge('cuilink.link.cache.hit_ratio', { description: 'Link cache hits / lookups since start' }).addCallback((r) => r.observe(this.stats().hitRatio));
    meter.createObservableGauge('cuilink.link.cache.entries', { description: 'Entries in the link cache' }).addCallback((r) => r.observe(this.map.size));
    meter.createObservableGauge('cuilink.link.cache.bytes', { description: 'Estimated bytes held by the link cache', unit: 'By' }).addCallback((r) => r.observe(this.bytes));
  }

  get enabled(): boolean {
    return this.limits.maxEntries > 0 && this.limits.maxBytes > 0;
  }

  /** `count` false: a first-stage probe of a two-stage lookup, counted by `countLookup` once decided. */
  get(key: string, count = true): CachedLink | undefined {
    const value = this.map.get(key);
    if (count) this.countLookup(value !== undefined);
    if (value === undefined) return undefined;
    // Re-insert: a Map iterates in insertion order, so the first key is the least recently used.
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  /** One mention looked up: a hit (answered without a model) or a miss. */
  countLookup(hit: boolean): void {
    if (hit) {
      this.counts.hits++;
      this.hitCounter.add(1);
    } else {
      this.counts.misses++;
      this.missCounter.add(1);
    }
  }

  set(key: string, value: CachedLink): void {
    if (!this.enabled) return;
    const size = sizeOf(key, value);
    if (size > this.limits.maxBytes) return;
    const old = this.map.get(key);
    if (old !== undefined) {
      this.map.delete(key);
      this.bytes -= sizeOf(key, old);
    }
    this.map.set(key, value);
    this.bytes += size;
    let evicted = 0;
    for (const [k, v] of this.map) {
      if (this.map.size <= this.limits.maxEntries && this.bytes <= this.limits.maxBytes) break;
      this.map.delete(k);
      this.bytes -= sizeOf(k, v);
      evicted++;
    }
    if (evicted > 0) {
      this.counts.evictions += evicted;
      this.evictionCounter.add(evicted);
    }
  }

  /** Counts mentions answered by a repeat within one call as hits (they cost no model run either). */
  countRepeats(n: number): void {
    if (n === 0) return;
    this.counts.hits += n;
    this.hitCounter.add(n);
  }

  /** Counts mentions linked from a cached retrieval by the reranker alone. */
  countRerankOnly(n: number): void {
    this.counts.rerankOnly += n;
  }

  /** Drops every entry (counters keep counting). */
  clear(): void {
    this.map.clear();
    this.bytes = 0;
  }

  stats(): LinkCacheStats {
    const lookups = this.counts.hits + this.counts.misses;
    return { ...this.counts, entries: this.map.size, bytes: this.bytes, hitRatio: lookups > 0 ? this.counts.hits / lookups : 0 };
  }
}
