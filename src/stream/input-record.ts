import { CuilinkError } from '../kb/errors.ts';
import { isRecordFault } from './dead-letter-policy.ts';
import { validateNote, type NoteLimits } from '../link/validate-note.ts';
import { recordSpanContext, type RecordHeaders } from '../telemetry/kafka-trace-context.ts';
import type { QueuedNote } from './note-batch-linker.ts';
import type { StageCodec } from './stage-codec.ts';
import type { InboundRecord } from './kafka/client-types.ts';

export type DecodedRecord = { kind: 'note'; queued: QueuedNote } | RejectedRecord;

/** A record the stage cannot use, and at which step that was found. */
export interface RejectedRecord {
  kind: 'rejected';
  error: CuilinkError;
  step: 'decode' | 'validate';
}

/**
 * Turns one input record into a validated note, or says why it cannot be one. What the record
 * itself is to blame for (a record-fault code, dead-letter-policy.ts) comes back as `rejected`
 * with the codec's or the validator's code; anything else is thrown: a retriable error (a schema
 * registry that does not answer), or an internal fault (a bug), which is never dead-lettered.
 */
export async function decodeInputRecord(codec: StageCodec, message: InboundRecord, limits: NoteLimits): Promise<DecodedRecord> {
  if (message.value === null || message.value.length === 0) return { kind: 'rejected', step: 'decode', error: new CuilinkError('EMPTY_RECORD', 'record has no value (tombstone or empty)') };
  const headers: RecordHeaders = message.headers;
  let note: unknown;
  try {
    // No string of more than 3 UTF-8 bytes per UTF-16 unit of the longest note, and no more items
    // in an array (the mentions) than a note may have: checked before anything is allocated.
    note = await codec.decodeNote(message.value, headers, { maxArrayItems: limits.maxMentions, maxStringBytes: limits.maxNoteChars * 3, code: 'NOTE_TOO_LARGE' });
  } catch (error) {
    // The codecs turn every way the bytes can be wrong into UNDECODABLE and its kin.
    if (isRecordFault(error)) return { kind: 'rejected', step: 'decode', error };
    throw error;
  }
  try {
    const valid = validateNote(note, limits);
    return { kind: 'note', queued: { note: valid, mentionCount: valid.mentions.length, recordContext: recordSpanContext(headers) } };
  } catch (error) {
    if (isRecordFault(error)) return { kind: 'rejected', step: 'validate', error };
    throw error;
  }
}
