import { knownSchemas, type KnownSchemas } from './avro-schemas.ts';
import { ConfluentAvroCodec, type SchemaRegistryOptions } from './confluent-avro-codec.ts';
import { PlainAvroCodec } from './plain-avro-codec.ts';
import type { RecordCodec } from './record-codec.ts';

/** The Confluent format when a schema registry is configured, plain Avro single-object encoding otherwise. */
export function createRecordCodec(options: { schemaRegistry?: SchemaRegistryOptions } = {}, schemas: KnownSchemas = knownSchemas()): RecordCodec {
  return options.schemaRegistry === undefined ? new PlainAvroCodec(schemas) : new ConfluentAvroCodec(options.schemaRegistry, schemas);
}
