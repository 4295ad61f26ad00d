import type avro from 'avsc';
import { CuilinkError } from '../../kb/errors.ts';
import type { RecordHeaders } from '../../telemetry/kafka-trace-context.ts';
import type { RecordOfKind } from './avro-records.ts';
import { knownSchemas, type KnownSchemas, type RecordKind, type WriterSchema } from './avro-schemas.ts';
import {
  headerString,
  readAvro,
  requireValue,
  resolverFor,
  SCHEMA_FINGERPRINT_HEADER,
  SCHEMA_NAME_HEADER,
  toAvroBuffer,
  type DecodeLimits,
  type EncodedValue,
  type RecordCodec,
} from './record-codec.ts';
import { hasSingleObjectMarker, SINGLE_OBJECT_HEADER_BYTES, SINGLE_OBJECT_MARKER, toSingleObject } from './single-object.ts';

/**
 * The default wire format, no registry needed: Avro single-object encoding (C3 01, the writer
 * schema's 8-byte CRC-64-AVRO fingerprint, the Avro binary; src/stream/avro/single-object.ts),
 * which Java's BinaryMessageDecoder and fastavro read natively. Readers know the current schemas
 * and every older one in schemas/history/, by fingerprint.
 *
 * Deprecated, read for one more release: the body alone with the writer's SHA-256 fingerprint in
 * the `cuilink-schema-fingerprint` header (what cuilink wrote before). No record of that format
 * starts with C3 01 (every shipped schema starts with a string or a union, where those bytes are
 * a negative length or branch), so the two never overlap.
 */
export class PlainAvroCodec implements RecordCodec {
  readonly format = 'avro-fingerprint' as const;
  private readonly resolvers = new Map<string, avro.Resolver | undefined>();

  constructor(private readonly schemas: KnownSchemas = knownSchemas()) {}

  async encode<K extends RecordKind>(kind: K, record: RecordOfKind[K]): Promise<EncodedValue> {
    const schema = this.schemas.current(kind);
    return {
      value: toSingleObject(schema.singleObjectFingerprint, toAvroBuffer(schema.type, kind, record)),
      headers: { [SCHEMA_NAME_HEADER]: schema.name },
    };
  }

  async decode<K extends RecordKind>(kind: K, value: Buffer | null | undefined, headers?: RecordHeaders, limits?: DecodeLimits): Promise<RecordOfKind[K]> {
    return this.decodeSync(kind, value, headers, limits);
  }

  decodeSync<K extends RecordKind>(kind: K, value: Buffer | null | undefined, headers?: RecordHeaders, limits?: DecodeLimits): RecordOfKind[K] {
    const bytes = requireValue(value, kind);
    const headerFingerprint = headerString(headers, SCHEMA_FINGERPRINT_HEADER);
    if (hasSingleObjectMarker(bytes)) {
      if (bytes.length < SINGLE_OBJECT_HEADER_BYTES) throw new CuilinkError('UNDECODABLE', `a single-object ${kind} value of ${bytes.length} bytes: too short for its ${SINGLE_OBJECT_HEADER_BYTES}-byte header`);
      const fingerprint = bytes.subarray(SINGLE_OBJECT_MARKER.length, SINGLE_OBJECT_HEADER_BYTES);
      const writer = this.schemas.bySingleObjectHeader(fingerprint);
      if (writer === undefined) throw new CuilinkError('UNKNOWN_SCHEMA', `unknown writer schema fingerprint ${fingerprint.toString('hex')} (CRC-64-AVRO, single-object header) for a ${kind} record`);
      // A record that names its schema twice, differently, is refused rather than guessed at.
      if (headerFingerprint !== undefined && headerFingerprint.toLowerCase() !== writer.fingerprint) {
        throw new CuilinkError('UNKNOWN_SCHEMA', `the ${SCHEMA_FINGERPRINT_HEADER} header ${headerFingerprint.slice(0, 64)} names another schema than the value's single-object fingerprint (${writer.name} from ${writer.file})`);
      }
      return this.read(kind, writer, bytes.subarray(SINGLE_OBJECT_HEADER_BYTES), limits);
    }
    if (headerFingerprint === undefined) {
      throw new CuilinkError('UNKNOWN_SCHEMA', `the writer schema of this ${kind} record is unknown: the value is not Avro single-object encoded (no C3 01 marker) and has no ${SCHEMA_FINGERPRINT_HEADER} header`);
    }
    // Deprecated format (body + SHA-256 header), read for one more release.
    const writer = this.schemas.byWriterFingerprint(headerFingerprint.toLowerCase());
    if (writer === undefined) throw new CuilinkError('UNKNOWN_SCHEMA', `unknown writer schema fingerprint ${headerFingerprint.slice(0, 64)} for a ${kind} record`);
    return this.read(kind, writer, bytes, limits);
  }

  private read<K extends RecordKind>(kind: K, writer: WriterSchema, body: Buffer, limits: DecodeLimits | undefined): RecordOfKind[K] {
    if (writer.kind !== kind) throw new CuilinkError('UNKNOWN_SCHEMA', `the record is ${writer.name}, expected ${kind}`);
    const reader = this.schemas.current(kind);
    if (!this.resolvers.has(writer.fingerprint)) {
      this.resolvers.set(writer.fingerprint, writer.current ? undefined : resolverFor(reader.type, writer.type, kind, writer.file));
    }
    return readAvro(reader.type, writer.type, body, this.resolvers.get(writer.fingerprint), kind, limits) as RecordOfKind[K];
  }
}
