import type { ConceptHit } from '../retrieve/candidate-retriever.ts';
import type { Candidate, MentionInput } from './types.ts';

/** What a model batch may mix: see LinkerParts.batchScope (linker.ts). */
export type BatchScope = 'note' | 'mention' | 'all';

/** One mention on its way through the linker's stages: what it reads, and what each stage found. */
export interface MentionWork {
  noteIndex: number;
  mention: MentionInput;
  expandedFrom: string | null;
  exactTexts: string[];
  /** Distributed readings of a composite mention (extra name lookups). */
  readings: string[];
  /** Inventory senses of an undefined short form. */
  senses: readonly string[];
  query: string;
  /** What the cross-encoder reads for the mention ('' without one). */
  rerankQuery: string;
  /** The rerank query when the cross-encoder reads context, else '': the link cache's key part. */
  contextKey: string;
  /** Hits and scores before reranking, kept for the link cache's two stages (link-memo.ts). */
  beforeRerank?: { hits: ConceptHit[]; scores: number[] };
  hits: ConceptHit[];
  scores: number[];
  reranked: boolean;
  vector?: Float32Array;
  votes?: { byConcept: Map<number, number>; kb: Set<number>; total: number };
  memoryDecided: boolean;
  memorySupport: number;
  memoryConcept?: Candidate;
}

/** Model batch groups of the given mentions (a group index each); undefined: one group. */
export function batchGroups(work: readonly MentionWork[], scope: BatchScope): number[] | undefined {
  if (scope === 'all') return undefined;
  return work.map((w, i) => (scope === 'mention' ? i : w.noteIndex));
}
