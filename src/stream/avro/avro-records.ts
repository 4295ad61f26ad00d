/**
 * The Avro records as avsc reads and writes them (schemas/*.avsc): optional fields are `null`,
 * timestamp-millis are epoch-millisecond numbers, bytes are Buffers.
 */
import type { Candidate } from '../../link/types.ts';

export interface NerMentionRecord {
  id: string;
  start: number;
  end: number;
  text: string;
  label: string;
  score: number | null;
}

export interface NoteEventRecord {
  noteId: string;
  text: string;
  mentions: NerMentionRecord[];
  source: string | null;
  timestamp: number;
  nerModelVersion: string | null;
}

/** Identical on the wire and in the linking core. */
export type CandidateRecord = Candidate;

export interface LinkedMentionRecord {
  mentionId: string;
  start: number;
  end: number;
  label: string;
  conceptId: string | null;
  conceptName: string | null;
  semanticTypes: string[];
  score: number;
  confidence: number | null;
  via: string | null;
  inKb: number | null;
  nil: boolean;
  reranked: boolean;
  candidates: CandidateRecord[];
  expandedFrom: string | null;
  memoryDecided: boolean;
  memorySupport: number;
}

export interface LinkedNoteRecord {
  noteId: string;
  mentions: LinkedMentionRecord[];
  linkerVersion: string;
  modelVersion: string;
  indexVersion: string;
  memoryVersion: string | null;
  linkedAt: number;
}

export interface GoldMentionRecord {
  noteId: string;
  mentionId: string;
  ids: string[];
  label: string;
  start: number;
  end: number;
  annotator: string | null;
  annotatedAt: number;
}

export interface HeaderRecord {
  key: string;
  value: Buffer | null;
}

export interface DeadLetterRecord {
  originalKey: Buffer | null;
  original: Buffer | null;
  originalHeaders: HeaderRecord[];
  errorCode: string;
  reason: string;
  sourceTopic: string;
  partition: number;
  offset: number;
  stage: string;
  failedAt: number;
  /** v2: the original was cut to fit the dead-letter topic (absent in v1 records: false). */
  originalTruncated: boolean;
  originalSha256: string | null;
  originalSize: number | null;
}

/** A mention sent to review (schemas/review-mention.avsc); no note or mention text. */
export interface ReviewMentionRecord {
  noteId: string;
  mentionId: string;
  start: number;
  end: number;
  label: string;
  conceptId: string | null;
  confidence: number | null;
  via: string | null;
  /** v2: P(the concept is in the KB); null without a calibration and in v1 records. */
  inKb: number | null;
  nil: boolean;
  candidates: { conceptId: string; name: string; score: number; via: string }[];
  linkerVersion: string;
  modelVersion: string;
  indexVersion: string;
  linkedAt: number;
}

/** A mention annotators are asked to label (schemas/label-request.avsc); no note or mention text. */
export interface LabelRequestRecord {
  noteId: string;
  mentionId: string;
  start: number;
  end: number;
  label: string;
  stream: 'learn' | 'measure';
  policy: string;
  priority: number;
  recurrence: number;
  conceptId: string | null;
  confidence: number | null;
  via: string | null;
  nil: boolean;
  candidates: { conceptId: string; name: string; score: number }[];
  memoryVersion: string | null;
  linkerVersion: string;
  modelVersion: string;
  indexVersion: string;
  requestedAt: number;
}

export interface RecordOfKind {
  NoteEvent: NoteEventRecord;
  LinkedNote: LinkedNoteRecord;
  GoldMention: GoldMentionRecord;
  DeadLetter: DeadLetterRecord;
  ReviewMention: ReviewMentionRecord;
  LabelRequest: LabelRequestRecord;
}
