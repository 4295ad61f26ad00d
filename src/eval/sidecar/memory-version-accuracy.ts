import { memorySequence } from '../../telemetry/memory-swap-telemetry.ts';

/** Scored samples and their acc@1 hits. */
export interface HitTally {
  n: number;
  hits: number;
}

export interface VersionTally extends HitTally {
  memoryVersion: string;
  /** The number the version's name starts with (000007-… → 7): the order versions are kept in. */
  sequence: number;
  firstScoredAt: number;
  lastScoredAt: number;
}

export interface MemoryVersionSnapshot {
  versions: VersionTally[];
  noMemory: HitTally;
  older: HitTally & { versions: number };
}

export interface MemoryVersionReport {
  /** Versions kept at most; older ones are folded into `older`. */
  limit: number;
  /** The newest `limit` versions, oldest first. */
  versions: (Omit<VersionTally, 'hits'> & { acc1: number | null })[];
  /** Samples linked without a memory: the baseline the versions gained on. */
  noMemory: { n: number; acc1: number | null };
  /** Versions folded out of `versions`, and their samples together. */
  older: { n: number; acc1: number | null; versions: number };
}

const acc1 = (t: HitTally): number | null => (t.n === 0 ? null : t.hits / t.n);

/**
 * acc@1 of the scored samples by the memory version of the linked note that produced each
 * prediction: what the memory gained, version after version. Bounded: the `limit` newest versions
 * (by sequence) are kept apart; a sample of an older one, and every version pushed out, is folded
 * into one `older` tally, so no sample is dropped and the state never grows with the updater's
 * version count (one every few seconds while labels arrive).
 */
export class MemoryVersionAccuracy {
  private readonly limit: number;
  private readonly versions = new Map<string, VersionTally>();
  private readonly noMemory: HitTally;
  private readonly older: HitTally & { versions: number };

  constructor(limit: number, restored?: MemoryVersionSnapshot) {
    if (!(limit >= 1) || !Number.isInteger(limit)) throw new RangeError('memory versions kept must be a positive integer');
    this.limit = limit;
    this.noMemory = { ...(restored?.noMemory ?? { n: 0, hits: 0 }) };
    this.older = { ...(restored?.older ?? { n: 0, hits: 0, versions: 0 }) };
    // The sequence again from the name: a state file may hold null where one was saved as Infinity.
    for (const v of restored?.versions ?? []) this.versions.set(v.memoryVersion, { ...v, sequence: memorySequence(v.memoryVersion) });
    while (this.versions.size > this.limit) this.foldOldest();
  }

  /** One scored sample: `version` null when the note was linked without a memory. */
  add(version: string | null, hit: boolean, now: number): void {
    if (version === null) {
      tally(this.noMemory, hit);
      return;
    }
    let entry = this.versions.get(version);
    if (!entry) {
      const sequence = memorySequence(version);
      if (this.versions.size >= this.limit && sequence <= this.oldest()!.sequence) {
        // Older than every version kept: counted with the other old ones, never back in the table.
        tally(this.older, hit);
        return;
      }
      entry = { memoryVersion: version, sequence, n: 0, hits: 0, firstScoredAt: now, lastScoredAt: now };
      this.versions.set(version, entry);
      if (this.versions.size > this.limit) this.foldOldest();
    }
    tally(entry, hit);
    entry.lastScoredAt = now;
  }

  report(): MemoryVersionReport {
    return {
      limit: this.limit,
      versions: this.sorted().map(({ hits, ...rest }) => ({ ...rest, acc1: acc1({ n: rest.n, hits }) })),
      noMemory: { n: this.noMemory.n, acc1: acc1(this.noMemory) },
      older: { n: this.older.n, acc1: acc1(this.older), versions: this.older.versions },
    };
  }

  snapshot(): MemoryVersionSnapshot {
    return { versions: this.sorted().map((v) => ({ ...v })), noMemory: { ...this.noMemory }, older: { ...this.older } };
  }

  private sorted(): VersionTally[] {
    return [...this.versions.values()].sort((a, b) => a.sequence - b.sequence || a.firstScoredAt - b.firstScoredAt);
  }

  private oldest(): VersionTally | undefined {
    return this.sorted()[0];
  }

  private foldOldest(): void {
    const oldest = this.oldest()!;
    this.versions.delete(oldest.memoryVersion);
    this.older.n += oldest.n;
    this.older.hits += oldest.hits;
    this.older.versions++;
  }
}

function tally(t: HitTally, hit: boolean): void {
  t.n++;
  if (hit) t.hits++;
}
