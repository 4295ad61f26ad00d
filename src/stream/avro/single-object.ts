import type avro from 'avsc';

/**
 * Avro single-object encoding (Avro specification, "Single-object encoding"): the two marker
 * bytes C3 01, the writer schema's 8-byte CRC-64-AVRO ("Rabin") fingerprint of its Parsing
 * Canonical Form, little-endian, then the Avro binary body. Java's `BinaryMessageEncoder` /
 * `BinaryMessageDecoder` and Python's libraries write and read it natively.
 */
export const SINGLE_OBJECT_MARKER = Buffer.from([0xc3, 0x01]);
/** Marker plus fingerprint: where the Avro body starts. */
export const SINGLE_OBJECT_HEADER_BYTES = SINGLE_OBJECT_MARKER.length + 8;

const MASK_64 = (1n << 64n) - 1n;
/** The spec's EMPTY: the fingerprint of zero bytes, and the polynomial's image. */
const CRC_64_AVRO_EMPTY = 0xc15d213aa4d7a795n;

const FP_TABLE: bigint[] = Array.from({ length: 256 }, (_, i) => {
  let fp = BigInt(i);
  for (let j = 0; j < 8; j++) fp = (fp >> 1n) ^ (CRC_64_AVRO_EMPTY & -(fp & 1n) & MASK_64);
  return fp;
});

/** CRC-64-AVRO of `bytes` as an unsigned 64-bit value (the spec's `fingerprint64`, whose Java `long` is this read as signed). */
export function crc64Avro(bytes: Uint8Array): bigint {
  let fp = CRC_64_AVRO_EMPTY;
  for (const byte of bytes) fp = (fp >> 8n) ^ FP_TABLE[Number((fp ^ BigInt(byte)) & 0xffn)]!;
  return fp;
}

/**
 * The schema's Parsing Canonical Form as avsc writes it (`type.schema()`: full names, only the
 * attributes that matter for parsing, logical types reduced to their underlying type, no
 * whitespace). The same bytes as fastavro's `to_parsing_canonical_form` and Java's
 * `SchemaNormalization.toParsingForm` for every schema cuilink ships (test/unit/stream/single-object.test.ts).
 */
export function parsingCanonicalForm(type: avro.Type): string {
  return JSON.stringify(type.schema());
}

/** The 8 fingerprint bytes as they appear in a single-object header (CRC-64-AVRO, little-endian). */
export function singleObjectFingerprint(type: avro.Type): Buffer {
  const fingerprint = Buffer.alloc(8);
  fingerprint.writeBigUInt64LE(crc64Avro(Buffer.from(parsingCanonicalForm(type), 'utf8')));
  return fingerprint;
}

/** Marker + fingerprint + body. */
export function toSingleObject(fingerprint: Buffer, body: Buffer): Buffer {
  return Buffer.concat([SINGLE_OBJECT_MARKER, fingerprint, body]);
}

/** True when `bytes` start with the single-object marker (the fingerprint may still be missing: check the length). */
export function hasSingleObjectMarker(bytes: Buffer): boolean {
  return bytes.length >= SINGLE_OBJECT_MARKER.length && bytes[0] === SINGLE_OBJECT_MARKER[0] && bytes[1] === SINGLE_OBJECT_MARKER[1];
}
