/**
 * The shapes the linking core takes and returns. They mirror the Avro records in schemas/
 * (NoteEvent in, LinkedNote out) so that the CLI's JSON lines and the Kafka stage carry the same
 * thing; the stream stage converts Avro records to these and back, nothing more.
 */
export interface MentionInput {
  /** Unique within the note. */
  id: string;
  /** Character offsets into the note text, end exclusive (UTF-16 code units, as JS strings index). */
  start: number;
  end: number;
  /** The covered text; must equal text.slice(start, end). */
  text: string;
  /** NER label from the upstream stage (e.g. `Disease`, `Chemical`). */
  label: string;
  /** NER confidence, when the upstream stage gives one. */
  score?: number | null;
}

export interface NoteInput {
  noteId: string;
  text: string;
  mentions: MentionInput[];
  source?: string | null;
  /** Epoch milliseconds. */
  timestamp?: number | null;
  nerModelVersion?: string | null;
}

export interface Candidate {
  conceptId: string;
  name: string;
  semanticTypes: string[];
  /**
   * The candidate's final score: w·cross-encoder + (1 − w)·retrievalScore when the cross-encoder
   * scored it, else its retrieval score (on a reranked mention capped at the lowest score the scored
   * candidates ranked with), less the hierarchy preference's penalty where it applies to a
   * name-lookup hit. The memory never changes a score. 1 only for an exact name match: the
   * mention's own text (`exact`), or the in-note long form of a short form (`via` abbreviation).
   * Candidates come best first, in the order the linker ranked them, which scores need not follow:
   * name-lookup hits before dense ones (a looser name match ranks there as 1 but reports its own
   * similarity), the dense ones by score; the cross-encoder reorders those it scored, across tiers,
   * above those it did not; a memory decision comes first, and the memory's votes reorder near ties.
   */
  score: number;
  /**
   * Similarity of the mention to the candidate: 1 for an exact name match (`exact`, or `via`
   * abbreviation), the bi-encoder cosine to the concept's nearest name for a looser name match,
   * that cosine fused with the trigram score for a dense hit. An `inventory` sense joins at the
   * best dense hit's cosine (a tie for the reranker to break), fused with its own trigram score. A
   * concept only the memory proposes: its nearest labelled mention's similarity × 0.98
   * (memory.denseThreshold's when none is among the nearest); 0 for an id outside the KB.
   */
  retrievalScore: number;
  /** True only when the mention's own text is a KB name of the concept (after normalization). */
  exact: boolean;
  /** The stage that produced the candidate (src/link/linking-stages.ts): exact, abbreviation, loose, xref, head-noun, inheritance, unqualified, composite, dense, inventory, memory. */
  via: string;
}

export interface LinkedMention {
  mentionId: string;
  start: number;
  end: number;
  label: string;
  /** Best concept, or null when nil. */
  conceptId: string | null;
  conceptName: string | null;
  semanticTypes: string[];
  /** Score of the best candidate (Candidate.score). */
  score: number;
  /** The calibrated probability that the best candidate is right; null when the linker runs without a calibration, or the mention has no candidate. */
  confidence: number | null;
  /** The stage that chose the best candidate: its candidate's `via`, or `memory` when the memory decided; null without candidates. */
  via: string | null;
  /**
   * The calibrated probability that the mention names a concept and that concept is in the KB
   * (the calibration's non-entity and NIL parts; 1 when it has neither); null or absent without a
   * calibration or without candidates. LinkedNote v4 and ReviewMention v2 carry it.
   */
  inKb?: number | null;
  /** No link: no candidate, or under a NIL threshold (nil.threshold on score, nil.inKb on inKb, nil.confidence on confidence). */
  nil: boolean;
  reranked: boolean;
  /** Top-k candidates, best first (kept also when nil). */
  candidates: Candidate[];
  /** Set when the mention was an in-note abbreviation resolved to its long form. */
  expandedFrom?: string | null;
  /** True when the labelled-mention memory's majority chose the concept (src/link/memory-evidence.ts). */
  memoryDecided?: boolean;
  /** Memory votes for the chosen concept (0 without memory evidence). */
  memorySupport?: number;
}

export interface LinkedNote {
  noteId: string;
  mentions: LinkedMention[];
  linkerVersion: string;
  modelVersion: string;
  indexVersion: string;
  /** The memory version that linked the note; null or absent without a memory. */
  memoryVersion?: string | null;
  /** Epoch milliseconds at which linking finished. */
  linkedAt: number;
}

/**
 * What the CLI, the Kafka stage and the evaluator call: one linking core, implemented by
 * `Linker` in src/link/linker.ts. Batching across notes is the caller's choice; the core encodes
 * all mentions of the notes it is given together.
 */
export interface LinkingCore {
  linkNotes(notes: NoteInput[]): Promise<LinkedNote[]>;
  readonly versions: { linkerVersion: string; modelVersion: string; indexVersion: string; memoryVersion?: string | null };
  /** The link options in force (a linker's; a test double may have none). */
  readonly config?: { nil: { confidence: number; inKb: number } };
  /** Whether links carry a calibrated confidence (a linker says; a test double may not). */
  readonly calibrated?: boolean;
  /** Whether the memory now served holds labels for the surface (false without a memory). */
  knowsSurface?(text: string): boolean;
  /**
   * Runs a fixed tiny input through the models, past any cache: resolves when they answer,
   * rejects with their error. Health probes use it (src/stream/linker-health-probe.ts); a core
   * without it is probed through linkNotes.
   */
  probe?(): Promise<void>;
  close(): Promise<void>;
}
