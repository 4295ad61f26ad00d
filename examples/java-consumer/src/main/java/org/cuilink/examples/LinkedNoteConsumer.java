package org.cuilink.examples;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BadHeaderException;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.MissingSchemaException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads cuilink's LinkedNote records from the output topic and prints one line per note:
 *
 * <pre>n-0001: m1 -> HP:0001250, m2 -> HP:0001252, m3 -> NIL</pre>
 *
 * The values are Avro single-object encoded (C3 01, the writer schema's CRC-64-AVRO fingerprint,
 * the Avro binary), so Avro's own {@link BinaryMessageDecoder} reads them: the current
 * linked-note.avsc is the reader schema, and the older versions (schemas/history/linked-note.vN.avsc)
 * are added so records written before a schema change are read with the new fields' defaults.
 * Reads with isolation.level=read_committed, so a stage in exactly-once mode shows only committed
 * notes, and commits its position after printing each poll's notes.
 *
 * <pre>--brokers HOST:PORT[,...]  (required)
 * --topic T          the stage's topics.output (default cuilink.linked)
 * --group G          consumer group (default cuilink-java-consumer)
 * --max-notes N      exit after N notes (default: run until stopped)
 * --idle-exit-ms MS  exit when nothing arrived for MS milliseconds (default: never)</pre>
 */
public final class LinkedNoteConsumer {
  private LinkedNoteConsumer() {}

  public static void main(String[] args) throws IOException {
    Map<String, String> options = parseOptions(args);
    String brokers = options.get("brokers");
    if (brokers == null) {
      System.err.println("usage: java -jar cuilink-java-consumer.jar --brokers HOST:PORT [--topic T] [--group G] [--max-notes N] [--idle-exit-ms MS]");
      System.exit(2);
    }
    String topic = options.getOrDefault("topic", "cuilink.linked");
    long maxNotes = Long.parseLong(options.getOrDefault("max-notes", "0"));
    long idleExitMs = Long.parseLong(options.getOrDefault("idle-exit-ms", "0"));

    Schema reader = schemaResource("schemas/linked-note.avsc");
    BinaryMessageDecoder<GenericRecord> decoder = new BinaryMessageDecoder<>(GenericData.get(), reader);
    List<Schema> older = olderSchemas();
    older.forEach(decoder::addSchema);
    System.err.printf("reader schema %s fingerprint %s, %d older version(s) known%n", reader.getFullName(), wireFingerprint(reader), older.size());

    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
    config.put(ConsumerConfig.GROUP_ID_CONFIG, options.getOrDefault("group", "cuilink-java-consumer"));
    config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

    long notes = 0;
    long skipped = 0;
    try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(config)) {
      Thread main = Thread.currentThread();
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        consumer.wakeup();
        try {
          main.join(10_000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }));
      consumer.subscribe(List.of(topic));
      long lastRecordAt = System.currentTimeMillis();
      try {
        while (maxNotes == 0 || notes < maxNotes) {
          ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(500));
          if (records.isEmpty()) {
            if (idleExitMs > 0 && System.currentTimeMillis() - lastRecordAt > idleExitMs) break;
            continue;
          }
          lastRecordAt = System.currentTimeMillis();
          for (ConsumerRecord<String, byte[]> record : records) {
            String where = record.topic() + "/" + record.partition() + "@" + record.offset();
            if (record.value() == null) continue;
            GenericRecord note;
            try {
              note = decoder.decode(record.value());
            } catch (MissingSchemaException e) {
              System.err.println("skipped " + where + ": written with a LinkedNote schema this consumer does not know (" + e.getMessage() + ")");
              skipped++;
              continue;
            } catch (BadHeaderException e) {
              System.err.println("skipped " + where + ": not Avro single-object encoded (" + e.getMessage() + ")");
              skipped++;
              continue;
            } catch (IOException | AvroRuntimeException e) {
              System.err.println("skipped " + where + ": unreadable (" + e.getMessage() + ")");
              skipped++;
              continue;
            }
            System.out.println(describe(note));
            notes++;
          }
          System.out.flush();
          consumer.commitSync();
        }
      } catch (WakeupException e) {
        // Stopped (SIGINT/SIGTERM): close below.
      }
    }
    System.err.printf("read %d LinkedNote(s) from %s, skipped %d%n", notes, topic, skipped);
  }

  /** {@code n-0001: m1 -> HP:0001250, m2 -> NIL} */
  static String describe(GenericRecord note) {
    StringBuilder line = new StringBuilder().append(note.get("noteId")).append(':');
    @SuppressWarnings("unchecked")
    List<GenericRecord> mentions = (List<GenericRecord>) note.get("mentions");
    String separator = " ";
    for (GenericRecord mention : mentions) {
      Object conceptId = mention.get("conceptId");
      line.append(separator).append(mention.get("mentionId")).append(" -> ").append(conceptId == null ? "NIL" : conceptId.toString());
      separator = ", ";
    }
    return line.toString();
  }

  /** The CRC-64-AVRO fingerprint as its 8 bytes follow C3 01 in a value (little-endian), in hex: docs/stream-formats.md lists the same. */
  static String wireFingerprint(Schema schema) {
    long fingerprint = SchemaNormalization.parsingFingerprint64(schema);
    StringBuilder hex = new StringBuilder();
    for (int i = 0; i < 8; i++) hex.append(String.format("%02x", (fingerprint >>> (8 * i)) & 0xff));
    return hex.toString();
  }

  /** schemas/history/linked-note.v1.avsc, v2, ... as far as they go. */
  static List<Schema> olderSchemas() throws IOException {
    List<Schema> schemas = new ArrayList<>();
    for (int version = 1; ; version++) {
      String name = "schemas/history/linked-note.v" + version + ".avsc";
      if (LinkedNoteConsumer.class.getClassLoader().getResource(name) == null) return schemas;
      schemas.add(schemaResource(name));
    }
  }

  static Schema schemaResource(String name) throws IOException {
    try (InputStream in = LinkedNoteConsumer.class.getClassLoader().getResourceAsStream(name)) {
      if (in == null) throw new IOException("missing resource " + name);
      // One parser per file: every version defines the same names.
      return new Schema.Parser().parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
  }

  static Map<String, String> parseOptions(String[] args) {
    Map<String, String> options = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        System.err.println("expected --name value pairs, got " + args[i]);
        System.exit(2);
      }
      options.put(args[i].substring(2), args[++i]);
    }
    return options;
  }
}
