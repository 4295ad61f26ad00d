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
  /** Final score used for ranking (reranker score when reranked, retrieval score otherwise). */
  score: number;
  /** Bi-encoder / lexical retrieval score. */
  retrievalScore: number;
  /** True when the candidate came from the exact normalized-string table. */
  exact: boolean;
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
  score: number;
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
  close(): Promise<void>;
}
