import { Agent as HttpsAgent } from 'node:https';
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

/** `topic`: `<topic>-value` (TopicNameStrategy); `record`: `<namespace.Name>`; `topic-record`: `<topic>-<namespace.Name>`. */
export type SubjectNameStrategy = 'topic' | 'record' | 'topic-record';

/** The registry client's options, secrets and PEM contents already read (src/stream/avro/schema-registry-config.ts reads them). */
export interface SchemaRegistryOptions {
  /** e.g. http://registry:8081 or https://registry:8081 */
  url: string;
  /** HTTP basic (Confluent's USER_INFO) or a bearer token (Authorization: Bearer). */
  auth?: { basic: { username: string; password: string } } | { bearer: { token: string } };
  /** https only: CA bundle (the system CAs when absent), client certificate and key (PEM). */
  tls?: { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean };
  /** Subject a schema is registered under; default `topic`. */
  subjectNameStrategy?: SubjectNameStrategy;
}

type RegistryArgs = ConstructorParameters<typeof SchemaRegistry>[0];
type RegistryMiddleware = NonNullable<RegistryArgs['middlewares']>[number];

/** The subject `kind`'s schema (full name `recordName`) is registered under when written to `topic`. */
export function subjectName(strategy: SubjectNameStrategy, recordName: string, topic: string | undefined): string {
  if (strategy === 'record') return recordName;
  if (topic === undefined || topic === '') {
    throw new CuilinkError('BAD_CONFIG', `schema registry: subject name strategy '${strategy}' needs the topic a ${recordName} is written to, and none was given`);
  }
  return strategy === 'topic' ? `${topic}-value` : `${topic}-${recordName}`;
}

/** Sets Authorization: Bearer on every registry request (the client's own `auth` is basic only). */
function bearerMiddleware(token: string): RegistryMiddleware {
  return () => ({
    async prepareRequest(next) {
      const request = await next();
      return request.enhance({ headers: { authorization: `Bearer ${token}` } });
    },
  });
}

/**
 * Notes, per schema id, whether the registry's answer to GET /schemas/ids/{id} held a schema (an
 * object with a string `schema`), so that a schema the client cannot parse is told apart from an
 * answer that is no schema at all (a proxy's error page): only the first is the record's fault.
 */
function schemaAnswerMiddleware(answered: Map<number, boolean>): RegistryMiddleware {
  return ({ resourceName, resourceMethod }) => ({
    async response(next) {
      const response = await next();
      if (resourceName === 'Schema' && resourceMethod === 'find') {
        answered.set(Number(response.request().params().id), holdsSchema(response.data()));
      }
      return response;
    },
  });
}

/** A JSON object with a string `schema` (read from text when the body came untyped). */
function holdsSchema(data: unknown): boolean {
  if (typeof data === 'string') {
    try {
      data = JSON.parse(data);
    } catch {
      return false;
    }
  }
  return typeof data === 'object' && data !== null && typeof (data as { schema?: unknown }).schema === 'string';
}

function registryArgs(options: SchemaRegistryOptions, answered: Map<number, boolean>): RegistryArgs {
  const args: RegistryArgs = { host: options.url, clientId: 'cuilink', retry: { retries: 2 } };
  const auth = options.auth;
  if (auth !== undefined && 'basic' in auth) args.auth = { username: auth.basic.username, password: auth.basic.password };
  args.middlewares = [...(auth !== undefined && 'bearer' in auth ? [bearerMiddleware(auth.bearer.token)] : []), schemaAnswerMiddleware(answered)];
  if (options.tls !== undefined && /^https:/i.test(options.url)) {
    const { ca, cert, key, rejectUnauthorized } = options.tls;
    args.agent = new HttpsAgent({ ca, cert, key, rejectUnauthorized: rejectUnauthorized ?? true });
  }
  return args;
}

const MAGIC_BYTE = 0;
const WIRE_HEADER_BYTES = 5;

/** Whether the value starts as the Confluent wire format does: magic byte 0 and room for a 4-byte schema id. */
export function hasConfluentWireHeader(bytes: Buffer): boolean {
  return bytes.length >= WIRE_HEADER_BYTES && bytes[0] === MAGIC_BYTE;
}

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
  /** By subject: a kind written to two topics is two subjects under the topic strategies. */
  private readonly registeredIds = new Map<string, Promise<number>>();
  private readonly agent: HttpsAgent | undefined;
  private readonly writers = new Map<string, Promise<RegistryWriter>>();
  private readonly plain: PlainAvroCodec;
  /** By schema id: whether the registry's last answer for it held a schema (schemaAnswerMiddleware). */
  private readonly schemaAnswers = new Map<number, boolean>();

  constructor(
    private readonly options: SchemaRegistryOptions,
    private readonly schemas: KnownSchemas = knownSchemas(),
  ) {
    const args = registryArgs(options, this.schemaAnswers);
    this.agent = args.agent as HttpsAgent | undefined;
    this.registry = new SchemaRegistry(args);
    this.plain = new PlainAvroCodec(schemas);
  }

  /** `topic`: where the record goes; required by the `topic` and `topic-record` subject name strategies. */
  async encode<K extends RecordKind>(kind: K, record: RecordOfKind[K], topic?: string): Promise<EncodedValue> {
    const schema = this.schemas.current(kind);
    const subject = subjectName(this.options.subjectNameStrategy ?? 'topic', schema.name, topic);
    const body = toAvroBuffer(schema.type, kind, record);
    const id = await this.registeredId(kind, subject);
    const header = Buffer.alloc(WIRE_HEADER_BYTES);
    header.writeUInt8(MAGIC_BYTE, 0);
    header.writeInt32BE(id, 1);
    return { value: Buffer.concat([header, body]), headers: { [SCHEMA_NAME_HEADER]: schema.name } };
  }

  async decode<K extends RecordKind>(kind: K, value: Buffer | null | undefined, headers?: RecordHeaders, limits?: DecodeLimits): Promise<RecordOfKind[K]> {
    const bytes = requireValue(value, kind);
    // The plain format: single-object encoded (its marker C3 01 is never the magic byte 0), or the deprecated fingerprint header.
    if (hasSingleObjectMarker(bytes) || headerString(headers, SCHEMA_FINGERPRINT_HEADER) !== undefined) return this.plain.decodeSync(kind, bytes, headers, limits);
    if (!hasConfluentWireHeader(bytes)) {
      throw new CuilinkError('UNDECODABLE', `value is in neither the Confluent wire format (no magic byte) nor the plain format (no single-object marker C3 01, no ${SCHEMA_FINGERPRINT_HEADER} header)`);
    }
    const id = bytes.readInt32BE(1);
    const writer = await this.writerFor(kind, id);
    return readAvro(this.schemas.current(kind).type, writer.type, bytes.subarray(WIRE_HEADER_BYTES), writer.resolver, kind, limits) as RecordOfKind[K];
  }

  async close(): Promise<void> {
    this.agent?.destroy();
  }

  private registeredId(kind: RecordKind, subject: string): Promise<number> {
    let id = this.registeredIds.get(subject);
    if (id === undefined) {
      const schema = this.schemas.current(kind);
      id = this.registry
        .register({ type: SchemaType.AVRO, schema: JSON.stringify(schema.raw) }, { subject })
        .then((r) => r.id)
        .catch((error: unknown) => {
          this.registeredIds.delete(subject);
          throw registryError(error, `registering ${schema.name} under subject ${subject}`);
        });
      this.registeredIds.set(subject, id);
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
          const answeredSchema = this.schemaAnswers.get(id) === true;
          this.schemaAnswers.delete(id);
          // The registry answered with a schema its client cannot parse (JSON Schema it refuses, an
          // unknown type, Avro that avsc refuses): the same answer on every read (a schema id never
          // changes), so the record can never be read; retried, it held its partition for ever.
          if (answeredSchema && isUnparsableSchema(error)) throw new CuilinkError('UNKNOWN_SCHEMA', `schema id ${id} is no Avro schema this reader can parse: ${(error as Error).message.slice(0, 200)}`, { cause: error });
          throw registryError(error, `fetching schema id ${id}`);
        })
        .then((found) => {
          this.schemaAnswers.delete(id);
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

/**
 * The registry client's verdict on what it fetched (another type than Avro, JSON or Protobuf; a
 * JSON Schema its validator refuses; an Avro schema avsc refuses; no schema at all): a
 * ConfluentSchemaRegistryArgumentError, by name (the package does not export its error classes).
 * Transport failures and HTTP statuses are other errors.
 */
function isUnparsableSchema(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConfluentSchemaRegistryArgumentError';
}

function registryError(error: unknown, action: string): CuilinkError {
  if (error instanceof CuilinkError) return error;
  const status = (error as { status?: unknown }).status;
  const message = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, ' ');
  if (status === 401 || status === 403) {
    // Retriable like an outage, so that the stage holds its input instead of dead-lettering it; the message says what to fix.
    const why = status === 401 ? '401 Unauthorized: check schemaRegistry.auth (username and password, or bearer token)' : '403 Forbidden: the credentials lack access to this subject or schema';
    return new CuilinkError('REGISTRY_UNAVAILABLE', `schema registry: ${action}: ${why}`, { retriable: true, cause: error });
  }
  if (status === 404) return new CuilinkError('UNKNOWN_SCHEMA', `schema registry: ${action}: not found`, { cause: error });
  if (status === 409) return new CuilinkError('INCOMPATIBLE_SCHEMA', `schema registry: ${action}: incompatible with the subject's earlier versions`, { cause: error });
  if (status === 422) return new CuilinkError('SCHEMA_INVALID', `schema registry: ${action}: rejected (${message})`, { cause: error });
  return new CuilinkError('REGISTRY_UNAVAILABLE', `schema registry: ${action}: ${message}`, { retriable: true, cause: error });
}
