import { createHash } from 'node:crypto';
import type { LinkedMention, LinkedNote, NoteInput } from '../../link/types.ts';
import type { RecordHeaders } from '../../telemetry/kafka-trace-context.ts';
import type { DeadLetterInfo, EncodedRecord, StageCodec } from '../stage-codec.ts';
import { headersToAvro, labelProposalToAvro, linkedMentionToReview, linkedNoteToAvro, noteEventToNoteInput } from './avro-conversions.ts';
import type { DecodeLimits, RecordCodec } from './record-codec.ts';
import type { LabelProposal } from '../label-selection/label-proposal.ts';

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
      reason: info.reason,
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
