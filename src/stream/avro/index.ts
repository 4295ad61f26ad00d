export * from './avro-records.ts';
export * from './avro-schemas.ts';
export * from './avro-conversions.ts';
export * from './record-codec.ts';
export { PlainAvroCodec } from './plain-avro-codec.ts';
export { ConfluentAvroCodec, type SchemaRegistryOptions } from './confluent-avro-codec.ts';
export { createRecordCodec } from './create-record-codec.ts';
export { AvroStageCodec, MAX_DEAD_LETTER_REASON_CHARS } from './avro-stage-codec.ts';
export * from './single-object.ts';
