import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type avro from 'avsc';
import { CuilinkError } from '../../kb/errors.ts';
import type { RecordHeaders } from '../../telemetry/kafka-trace-context.ts';
import type { RecordOfKind } from './avro-records.ts';
import { knownSchemas, type KnownSchemas, type RecordKind } from './avro-schemas.ts';
import { PlainAvroCodec } from './plain-avro-codec.ts';
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
import { hasSingleObjectMarker } from './single-object.ts';

export interface SchemaRegistryOptions {
  /** e.g. http://registry:8081 */
  url: string;
  auth?: { username: string; password: string };
  /** Subject a kind's schema is registered under; default the record name (RecordNameStrategy), e.g. org.cuilink.NoteEvent. */
  subjectOf?: (kind: RecordKind, recordName: string) => string;
}

const MAGIC_BYTE = 0;
const WIRE_HEADER_BYTES = 5;

interface RegistryWriter {
  /** The writer schema as avsc parsed it from the registry. */
  type: avro.Type;
  resolver: avro.Resolver;
}

/**
 * The Confluent wire format (magic byte 0, 4-byte big-endian schema id, Avro binary) through a
 * schema registry (@kafkajs/confluent-schema-registry's REST client). Writes register the
 * current schema once per kind; reads fetch the writer schema by id once and resolve it against
 * the current reader schema. Records in the plain format (Avro single-object encoding, or the
 * deprecated fingerprint header) are still read (a topic may hold both while producers migrate).
 */
export class ConfluentAvroCodec implements RecordCodec {
  readonly format = 'confluent' as const;
  private readonly registry: SchemaRegistry;
  private readonly registeredIds = new Map<RecordKind, Promise<number>>();
  private readonly writers = new Map<string, Promise<RegistryWriter>>();
  private readonly plain: PlainAvroCodec;

  constructor(
    private readonly options: SchemaRegistryOptions,
    private readonly schemas: KnownSchemas = knownSchemas(),
  ) {
    this.registry = new SchemaRegistry({ host: options.url, clientId: 'cuilink', auth: options.auth, retry: { retries: 2 } });
    this.plain = new PlainAvroCodec(schemas);
  }

  async encode<K extends RecordKind>(kind: K, record: RecordOfKind[K]): Promise<EncodedValue> {
    const schema = this.schemas.current(kind);
    const body = toAvroBuffer(schema.type, kind, record);
    const id = await this.registeredId(kind);
    const header = Buffer.alloc(WIRE_HEADER_BYTES);
    header.writeUInt8(MAGIC_BYTE, 0);
    header.writeInt32BE(id, 1);
    return { value: Buffer.concat([header, body]), headers: { [SCHEMA_NAME_HEADER]: schema.name } };
  }

  async decode<K extends RecordKind>(kind: K, value: Buffer | null | undefined, headers?: RecordHeaders, limits?: DecodeLimits): Promise<RecordOfKind[K]> {
    const bytes = requireValue(value, kind);
    // The plain format: single-object encoded (its marker C3 01 is never the magic byte 0), or the deprecated fingerprint header.
    if (hasSingleObjectMarker(bytes) || headerString(headers, SCHEMA_FINGERPRINT_HEADER) !== undefined) return this.plain.decodeSync(kind, bytes, headers, limits);
    if (bytes.length < WIRE_HEADER_BYTES || bytes[0] !== MAGIC_BYTE) {
      throw new CuilinkError('UNDECODABLE', `value is in neither the Confluent wire format (no magic byte) nor the plain format (no single-object marker C3 01, no ${SCHEMA_FINGERPRINT_HEADER} header)`);
    }
    const id = bytes.readInt32BE(1);
    const writer = await this.writerFor(kind, id);
    return readAvro(this.schemas.current(kind).type, writer.type, bytes.subarray(WIRE_HEADER_BYTES), writer.resolver, kind, limits) as RecordOfKind[K];
  }

  private registeredId(kind: RecordKind): Promise<number> {
    let id = this.registeredIds.get(kind);
    if (id === undefined) {
      const schema = this.schemas.current(kind);
      const subject = this.options.subjectOf?.(kind, schema.name) ?? schema.name;
      id = this.registry
        .register({ type: SchemaType.AVRO, schema: JSON.stringify(schema.raw) }, { subject })
        .then((r) => r.id)
        .catch((error: unknown) => {
          this.registeredIds.delete(kind);
          throw registryError(error, `registering ${schema.name} under subject ${subject}`);
        });
      this.registeredIds.set(kind, id);
    }
    return id;
  }

  private writerFor(kind: RecordKind, id: number): Promise<RegistryWriter> {
    const key = `${kind}:${id}`;
    let writer = this.writers.get(key);
    if (writer === undefined) {
      writer = this.registry
        .getSchema(id)
        .catch((error: unknown) => {
          throw registryError(error, `fetching schema id ${id}`);
        })
        .then((found) => {
          const type = found as unknown as avro.Type;
          const name = type.name ?? '';
          if (name.split('.').at(-1) !== kind) throw new CuilinkError('UNKNOWN_SCHEMA', `schema id ${id} is ${name || 'not a named record'}, expected ${kind}`);
          return { type, resolver: resolverFor(this.schemas.current(kind).type, type, kind, `registry id ${id}`) };
        });
      // A failed lookup is not cached: the registry may come back, or the id may be registered later.
      writer.catch(() => this.writers.delete(key));
      this.writers.set(key, writer);
    }
    return writer;
  }
}

function registryError(error: unknown, action: string): CuilinkError {
  if (error instanceof CuilinkError) return error;
  const status = (error as { status?: unknown }).status;
  const message = error instanceof Error ? error.message : String(error);
  if (status === 404) return new CuilinkError('UNKNOWN_SCHEMA', `schema registry: ${action}: not found`, { cause: error });
  if (status === 409) return new CuilinkError('INCOMPATIBLE_SCHEMA', `schema registry: ${action}: incompatible with the subject's earlier versions`, { cause: error });
  if (status === 422) return new CuilinkError('SCHEMA_INVALID', `schema registry: ${action}: rejected (${message})`, { cause: error });
  return new CuilinkError('REGISTRY_UNAVAILABLE', `schema registry: ${action}: ${message}`, { retriable: true, cause: error });
}
