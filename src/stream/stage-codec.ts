import type { LinkedMention, LinkedNote, NoteInput } from '../link/types.ts';
import type { RecordHeaders } from '../telemetry/kafka-trace-context.ts';
import type { DecodeLimits } from './avro/avro-bounds.ts';
import type { LabelProposal } from './label-selection/label-proposal.ts';

/** What a dead-letter record says about the input it replaces (schemas/dead-letter.avsc). */
export interface DeadLetterInfo {
  errorCode: string;
  reason: string;
  sourceTopic: string;
  sourcePartition: number;
  sourceOffset: string;
  stage: string;
  /** Epoch milliseconds. */
  failedAt: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeaders;
  /** Set when key/value/headers were cut to fit the topic: the whole value's size and SHA-256. */
  truncated?: { sha256: string; size: number };
}

export interface EncodedRecord {
  value: Buffer;
  headers: Record<string, string | Buffer>;
}

/**
 * The stage's view of the wire format: NoteEvent bytes in, LinkedNote and DeadLetter bytes out.
 * Each encode is told the topic the record goes to (the registry subject is named after it).
 * decodeNote throws CuilinkError (UNDECODABLE, UNKNOWN_SCHEMA, ... non-retriable → dead letter;
 * retriable, e.g. registry unreachable → retried). Implemented over src/stream/avro.
 */
export interface StageCodec {
  /** `limits` are enforced on the encoded bytes, before the note is built (NOTE_TOO_LARGE). */
  decodeNote(value: Buffer, headers: RecordHeaders, limits?: DecodeLimits): Promise<NoteInput>;
  encodeLinkedNote(note: LinkedNote, topic: string): Promise<EncodedRecord>;
  encodeDeadLetter(info: DeadLetterInfo, topic: string): Promise<EncodedRecord>;
  /** A mention of a linked note for the review topic (ReviewMention). */
  encodeReviewMention(note: LinkedNote, mention: LinkedMention, topic: string): Promise<EncodedRecord>;
  /** A mention annotators are asked to label (LabelRequest). */
  encodeLabelRequest(proposal: LabelProposal, topic: string): Promise<EncodedRecord>;
}
