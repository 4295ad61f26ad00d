import avro from 'avsc';
import { CuilinkError } from '../../kb/errors.ts';
import type { RecordHeaders } from '../../telemetry/kafka-trace-context.ts';
import type { RecordOfKind } from './avro-records.ts';
import type { RecordKind } from './avro-schemas.ts';
import { checkAvroBounds, type DecodeLimits } from './avro-bounds.ts';

export type { DecodeLimits } from './avro-bounds.ts';

/** Hex SHA-256 of the writer schema's canonical form (plain Avro format). */
export const SCHEMA_FINGERPRINT_HEADER = 'cuilink-schema-fingerprint';
/** Full record name of the writer schema, e.g. org.cuilink.NoteEvent (both formats; informative). */
export const SCHEMA_NAME_HEADER = 'cuilink-schema';

export interface EncodedValue {
  value: Buffer;
  headers: Record<string, string>;
}

/**
 * Avro records to Kafka values and back. Decoding resolves the writer's schema against the
 * current reader schema, so records written with an older schema are read with defaults; it
 * throws CuilinkError: UNDECODABLE, UNKNOWN_SCHEMA or INCOMPATIBLE_SCHEMA (never retriable: the
 * record goes to the dead-letter topic) or REGISTRY_UNAVAILABLE (retriable).
 */
export interface RecordCodec {
  readonly format: 'avro-fingerprint' | 'confluent';
  /**
   * `topic`: where the record will be produced. The Confluent codec registers the schema under a
   * subject named after it (TopicNameStrategy by default) and fails without it; the plain codec ignores it.
   */
  encode<K extends RecordKind>(kind: K, record: RecordOfKind[K], topic?: string): Promise<EncodedValue>;
  /** `limits` are checked on the bytes before anything is allocated for them (src/stream/avro/avro-bounds.ts). */
  decode<K extends RecordKind>(kind: K, value: Buffer | null | undefined, headers?: RecordHeaders, limits?: DecodeLimits): Promise<RecordOfKind[K]>;
  close?(): Promise<void>;
}

export function headerString(headers: RecordHeaders | undefined, key: string): string | undefined {
  const value = headers?.[key];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.toString();
}

/** Validates before writing: avsc's own writer can emit garbage for a wrong value instead of failing. */
export function toAvroBuffer(type: avro.Type, kind: RecordKind, record: unknown): Buffer {
  const problems: string[] = [];
  const valid = type.isValid(record, {
    errorHook: (path: string[], value: unknown) => {
      if (problems.length < 3) problems.push(`${path.join('.') || '(record)'} = ${describe(value)}`);
    },
  });
  if (!valid) throw new CuilinkError('INVALID_RECORD', `not a valid ${kind} record: ${problems.join('; ')}`);
  return type.toBuffer(record);
}

// Values may be note text (PHI): the error names their type only.
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/**
 * Reads `bytes` (written with `writer`) as the reader type; avsc errors become UNDECODABLE. The
 * bytes are first checked against the writer schema and `limits` without allocating, since avsc
 * trusts the counts it reads.
 */
export function readAvro(reader: avro.Type, writer: avro.Type, bytes: Buffer, resolver: avro.Resolver | undefined, kind: RecordKind, limits?: DecodeLimits): unknown {
  checkAvroBounds(writer, bytes, kind, limits);
  try {
    return resolver === undefined ? reader.fromBuffer(bytes) : reader.fromBuffer(bytes, resolver);
  } catch (error) {
    throw new CuilinkError('UNDECODABLE', `value is not a readable ${kind} Avro record: ${(error as Error).message}`, { cause: error });
  }
}

export function resolverFor(reader: avro.Type, writer: avro.Type, kind: RecordKind, writerDescription: string): avro.Resolver {
  try {
    return reader.createResolver(writer);
  } catch (error) {
    throw new CuilinkError('INCOMPATIBLE_SCHEMA', `the writer schema ${writerDescription} cannot be read as the current ${kind}: ${(error as Error).message}`, { cause: error });
  }
}

export function requireValue(value: Buffer | null | undefined, kind: RecordKind): Buffer {
  if (value === null || value === undefined || value.length === 0) throw new CuilinkError('UNDECODABLE', `empty value where a ${kind} record was expected`);
  return value;
}
