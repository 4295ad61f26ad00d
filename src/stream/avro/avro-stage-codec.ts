import { createHash } from 'node:crypto';
import type { LinkedMention, LinkedNote, NoteInput } from '../../link/types.ts';
import type { RecordHeaders } from '../../telemetry/kafka-trace-context.ts';
import type { DeadLetterInfo, EncodedRecord, StageCodec } from '../stage-codec.ts';
import { headersToAvro, labelProposalToAvro, linkedMentionToReview, linkedNoteToAvro, noteEventToNoteInput } from './avro-conversions.ts';
import type { DecodeLimits, RecordCodec } from './record-codec.ts';
import type { LabelProposal } from '../label-selection/label-proposal.ts';

/**
 * A dead letter's `reason` is cut to this many characters (UTF-16 code units). Error messages are
 * not bounded by anything else: a validator's reason names the note by its id, which may be as long
 * as the decoder lets a string be, and a schema resolver's quotes both schemas. Uncut, such a
 * reason alone could exceed the dead-letter topic's max.message.bytes (the original and key are cut
 * to fit, a reason is not), and one bad record would stop the stage with DEAD_LETTER_TOO_LARGE.
 * 1,000 characters (at most 3,000 UTF-8 bytes) hold every reason about a record with ordinary
 * ids whole and fit beside a cut key in the smallest limit topics.maxMessageBytes allows (4,096).
 */
export const MAX_DEAD_LETTER_REASON_CHARS = 1000;

/** `reason` whole when within the bound, else its start and how long it was. */
export function boundedReason(reason: string): string {
  if (reason.length <= MAX_DEAD_LETTER_REASON_CHARS) return reason;
  const marker = `… (cut from ${reason.length} characters)`;
  let end = MAX_DEAD_LETTER_REASON_CHARS - marker.length;
  // Never half a surrogate pair: the reason is a string field, written as UTF-8.
  const last = reason.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${reason.slice(0, end)}${marker}`;
}

/** The stage's codec over Avro: NoteEvent in, LinkedNote and DeadLetter out. */
export class AvroStageCodec implements StageCodec {
  constructor(private readonly codec: RecordCodec) {}

  async decodeNote(value: Buffer, headers: RecordHeaders, limits?: DecodeLimits): Promise<NoteInput> {
    return noteEventToNoteInput(await this.codec.decode('NoteEvent', value, headers, limits));
  }

  async encodeLinkedNote(note: LinkedNote, topic: string): Promise<EncodedRecord> {
    return this.codec.encode('LinkedNote', linkedNoteToAvro(note), topic);
  }

  async encodeReviewMention(note: LinkedNote, mention: LinkedMention, topic: string): Promise<EncodedRecord> {
    return this.codec.encode('ReviewMention', linkedMentionToReview(note, mention), topic);
  }

  async encodeLabelRequest(proposal: LabelProposal, topic: string): Promise<EncodedRecord> {
    return this.codec.encode('LabelRequest', labelProposalToAvro(proposal), topic);
  }

  async encodeDeadLetter(info: DeadLetterInfo, topic: string): Promise<EncodedRecord> {
    return this.codec.encode('DeadLetter', {
      originalKey: info.key,
      original: info.value,
      originalHeaders: headersToAvro(info.headers),
      errorCode: info.errorCode,
      reason: boundedReason(info.reason),
      sourceTopic: info.sourceTopic,
      partition: info.sourcePartition,
      offset: Number(info.sourceOffset),
      stage: info.stage,
      failedAt: info.failedAt,
      originalTruncated: info.truncated !== undefined,
      originalSha256: info.truncated?.sha256 ?? (info.value === null ? null : createHash('sha256').update(info.value).digest('hex')),
      originalSize: info.truncated?.size ?? (info.value === null ? null : info.value.length),
    }, topic);
  }
}
