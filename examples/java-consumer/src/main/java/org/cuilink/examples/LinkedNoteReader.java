package org.cuilink.examples;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.MissingSchemaException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * Reads a LinkedNote value in each of the wire formats cuilink's stage may have written
 * (docs/stream-formats.md, "Wire formats"):
 *
 * <ul>
 *   <li>Avro single-object encoding (C3 01, CRC-64-AVRO fingerprint, Avro binary), read by Avro's
 *       own {@link BinaryMessageDecoder} with the older schema versions added;
 *   <li>the deprecated format of earlier releases: the Avro binary alone, its writer schema named by
 *       the {@code cuilink-schema-fingerprint} header (hex SHA-256 of the Parsing Canonical Form),
 *       still on topics written before the upgrade;
 *   <li>the Confluent wire format (magic byte 0, schema id), which needs a schema registry this
 *       example does not talk to: recognised so that the consumer stops on it rather than skip
 *       every record of a registry topic.
 * </ul>
 *
 * A record that another build or client could read (a newer or foreign schema, a registry's) is
 * {@link Stop}: skipping it would commit past it for good. One that nobody can read is {@link Skip}.
 */
final class LinkedNoteReader {
  static final String FINGERPRINT_HEADER = "cuilink-schema-fingerprint";

  sealed interface Outcome permits Note, Skip, Stop {}

  record Note(GenericRecord note) implements Outcome {}

  record Skip(String reason) implements Outcome {}

  record Stop(String reason) implements Outcome {}

  final Schema reader;
  final List<Schema> older;
  private final BinaryMessageDecoder<GenericRecord> singleObject;
  private final Map<String, Schema> bySha256 = new HashMap<>();

  LinkedNoteReader() throws IOException {
    reader = schemaResource("schemas/linked-note.avsc");
    older = olderSchemas();
    singleObject = new BinaryMessageDecoder<>(GenericData.get(), reader);
    older.forEach(singleObject::addSchema);
    bySha256.put(sha256(reader), reader);
    for (Schema schema : older) bySha256.put(sha256(schema), schema);
  }

  Outcome read(byte[] value, Headers headers) {
    if (value.length >= 2 && value[0] == (byte) 0xc3 && value[1] == 0x01) {
      try {
        return new Note(singleObject.decode(value));
      } catch (MissingSchemaException e) {
        String fingerprint = value.length >= 10 ? HexFormat.of().formatHex(value, 2, 10) : "(truncated)";
        return new Stop("written with a schema this build does not know (single-object fingerprint " + fingerprint
            + "): a LinkedNote schema newer than this build's (rebuild it from the newer cuilink's schemas/ and rerun), or not a LinkedNote (is --topic the stage's topics.output?)");
      } catch (IOException | AvroRuntimeException e) {
        return new Skip("unreadable single-object value (" + e.getMessage() + ")");
      }
    }
    String headerFingerprint = firstHeader(headers, FINGERPRINT_HEADER);
    if (headerFingerprint != null) {
      Schema writer = bySha256.get(headerFingerprint.toLowerCase(Locale.ROOT));
      if (writer == null) {
        return new Stop("written with a schema this build does not know (" + FINGERPRINT_HEADER + " header " + headerFingerprint + "): not a LinkedNote schema cuilink has shipped (is --topic the stage's topics.output?)");
      }
      return readBody(writer, value);
    }
    if (value.length >= 5 && value[0] == 0) {
      return new Stop("in the Confluent wire format (magic byte 0, schema id " + ByteBuffer.wrap(value, 1, 4).getInt()
          + "): the stage writes it when a schema registry is configured; read such a topic with a registry-aware deserializer (Confluent's KafkaAvroDeserializer), not this example");
    }
    return new Skip("not a cuilink LinkedNote value (no single-object marker C3 01, no " + FINGERPRINT_HEADER + " header, no Confluent magic byte)");
  }

  private Outcome readBody(Schema writer, byte[] value) {
    try {
      BinaryDecoder decoder = DecoderFactory.get().binaryDecoder(value, null);
      GenericRecord note = new GenericDatumReader<GenericRecord>(writer, reader).read(null, decoder);
      if (!decoder.isEnd()) return new Skip("unreadable value: bytes left over after the record");
      return new Note(note);
    } catch (IOException | AvroRuntimeException e) {
      return new Skip("unreadable value (" + e.getMessage() + ")");
    }
  }

  /** The first one when repeated, as cuilink's own reader takes it. */
  private static String firstHeader(Headers headers, String key) {
    Iterator<Header> found = headers.headers(key).iterator();
    if (!found.hasNext()) return null;
    byte[] value = found.next().value();
    return value == null ? null : new String(value, StandardCharsets.UTF_8);
  }

  /** The CRC-64-AVRO fingerprint as its 8 bytes follow C3 01 in a value (little-endian), in hex: docs/stream-formats.md lists the same. */
  static String wireFingerprint(Schema schema) {
    long fingerprint = SchemaNormalization.parsingFingerprint64(schema);
    StringBuilder hex = new StringBuilder();
    for (int i = 0; i < 8; i++) hex.append(String.format("%02x", (fingerprint >>> (8 * i)) & 0xff));
    return hex.toString();
  }

  private static String sha256(Schema schema) {
    try {
      return HexFormat.of().formatHex(SchemaNormalization.parsingFingerprint("SHA-256", schema));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime has SHA-256", e);
    }
  }

  /** schemas/history/linked-note.v1.avsc, v2, ... as far as they go. */
  private static List<Schema> olderSchemas() throws IOException {
    List<Schema> schemas = new ArrayList<>();
    for (int version = 1; ; version++) {
      String name = "schemas/history/linked-note.v" + version + ".avsc";
      if (LinkedNoteReader.class.getClassLoader().getResource(name) == null) return schemas;
      schemas.add(schemaResource(name));
    }
  }

  private static Schema schemaResource(String name) throws IOException {
    try (InputStream in = LinkedNoteReader.class.getClassLoader().getResourceAsStream(name)) {
      if (in == null) throw new IOException("missing resource " + name);
      // One parser per file: every version defines the same names.
      return new Schema.Parser().parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
  }
}
