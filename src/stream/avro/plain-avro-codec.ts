import type avro from 'avsc';
import { CuilinkError } from '../../kb/errors.ts';
import type { RecordHeaders } from '../../telemetry/kafka-trace-context.ts';
import type { RecordOfKind } from './avro-records.ts';
import { knownSchemas, type KnownSchemas, type RecordKind } from './avro-schemas.ts';
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

/**
 * The default wire format: plain Avro binary, the writer schema named by its SHA-256 fingerprint
 * in a header. Readers know the current schemas and every older one in schemas/history/, so no
 * registry service is needed.
 */
export class PlainAvroCodec implements RecordCodec {
  readonly format = 'avro-fingerprint' as const;
  private readonly resolvers = new Map<string, avro.Resolver | undefined>();

  constructor(private readonly schemas: KnownSchemas = knownSchemas()) {}

  async encode<K extends RecordKind>(kind: K, record: RecordOfKind[K]): Promise<EncodedValue> {
    const schema = this.schemas.current(kind);
    return {
      value: toAvroBuffer(schema.type, kind, record),
      headers: { [SCHEMA_FINGERPRINT_HEADER]: schema.fingerprint, [SCHEMA_NAME_HEADER]: schema.name },
    };
  }

  async decode<K extends RecordKind>(kind: K, value: Buffer | null | undefined, headers?: RecordHeaders, limits?: DecodeLimits): Promise<RecordOfKind[K]> {
    return this.decodeSync(kind, value, headers, limits);
  }

  decodeSync<K extends RecordKind>(kind: K, value: Buffer | null | undefined, headers?: RecordHeaders, limits?: DecodeLimits): RecordOfKind[K] {
    const bytes = requireValue(value, kind);
    const fingerprint = headerString(headers, SCHEMA_FINGERPRINT_HEADER);
    if (fingerprint === undefined) {
      throw new CuilinkError('UNKNOWN_SCHEMA', `no ${SCHEMA_FINGERPRINT_HEADER} header: the writer schema of this ${kind} record is unknown`);
    }
    const writer = this.schemas.byWriterFingerprint(fingerprint.toLowerCase());
    if (writer === undefined) throw new CuilinkError('UNKNOWN_SCHEMA', `unknown writer schema fingerprint ${fingerprint.slice(0, 64)} for a ${kind} record`);
    if (writer.kind !== kind) throw new CuilinkError('UNKNOWN_SCHEMA', `the record is ${writer.name}, expected ${kind}`);
    const reader = this.schemas.current(kind);
    if (!this.resolvers.has(writer.fingerprint)) {
      this.resolvers.set(writer.fingerprint, writer.current ? undefined : resolverFor(reader.type, writer.type, kind, writer.file));
    }
    return readAvro(reader.type, writer.type, bytes, this.resolvers.get(writer.fingerprint), kind, limits) as RecordOfKind[K];
  }
}
