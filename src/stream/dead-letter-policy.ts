import { CuilinkError } from '../kb/errors.ts';

/**
 * The closed list of error codes that prove a failure is the record's own fault, so that the
 * record may be dead-lettered and its offset committed. Anything else — a code bug (TypeError, a
 * plain Error), an inference failure, an encoder that gave up, a registry that refuses, an
 * output the stage itself cannot encode — is an internal fault: retried, or the stage stops
 * without committing and exits non-zero. Dead-lettering an internal fault would drain the whole
 * stream into the dead-letter topic (issue #27).
 *
 * Where each code comes from:
 * - decode (src/stream/input-record.ts, src/stream/avro/*): `EMPTY_RECORD` (tombstone or empty
 *   value), `UNKNOWN_SCHEMA` (no or unknown fingerprint header / registry id, another record type),
 *   `UNDECODABLE` (bytes that are no readable NoteEvent), `INCOMPATIBLE_SCHEMA` (a writer schema the
 *   current NoteEvent cannot read), `BAD_TEXT_ENCODING` (a string that is not UTF-8),
 *   `RECORD_TOO_LARGE` (counts, lengths or nesting over the limits, avro-bounds.ts' default code);
 * - validation (src/link/validate-note.ts, InputError): `BAD_NOTE`, `EMPTY_NOTE`, `NOTE_TOO_LARGE`,
 *   `BAD_MENTION`, `BAD_SPAN`, `SPAN_TEXT_MISMATCH`;
 * - produce (src/stream/partition-batch-handler.ts): `OUTPUT_TOO_LARGE` (the note's LinkedNote does
 *   not fit the output topic even without candidates).
 *
 * Not in the list on purpose: `LINK_FAILED`, `INFERENCE_FAILED`, `ENCODER_*`, `BAD_MODEL`,
 * `SCHEMA_INVALID` (the registry or a schema file, not the record), `INVALID_RECORD` (an output the
 * stage built wrong), `DEAD_LETTER_TOO_LARGE` (cannot be dead-lettered at all), and every
 * retriable error. src/telemetry/stage-metrics.ts `DEAD_LETTER_CODES` lists the same codes (a unit
 * test keeps the two equal).
 */
export const RECORD_FAULT_CODES: ReadonlySet<string> = new Set([
  'EMPTY_RECORD',
  'UNKNOWN_SCHEMA',
  'UNDECODABLE',
  'INCOMPATIBLE_SCHEMA',
  'BAD_TEXT_ENCODING',
  'RECORD_TOO_LARGE',
  'BAD_NOTE',
  'EMPTY_NOTE',
  'NOTE_TOO_LARGE',
  'BAD_MENTION',
  'BAD_SPAN',
  'SPAN_TEXT_MISMATCH',
  'OUTPUT_TOO_LARGE',
]);

/**
 * Whether `error` is proven to be about the record: a non-retriable CuilinkError (InputError
 * included) whose code is in RECORD_FAULT_CODES. Only such errors may be dead-lettered; a plain
 * Error or any other object, even one carrying a listed `code`, is not proof.
 */
export function isRecordFault(error: unknown): error is CuilinkError {
  return error instanceof CuilinkError && !error.retriable && RECORD_FAULT_CODES.has(error.code);
}
