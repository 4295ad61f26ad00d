package org.cuilink.examples;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads cuilink's LinkedNote records from the output topic and prints one line per note:
 *
 * <pre>n-0001: m1 -> HP:0001250, m2 -> NIL</pre>
 *
 * Values are read by {@link LinkedNoteReader} (Avro single-object encoding with Avro's own
 * BinaryMessageDecoder, older schema versions resolved to the current one). Reads with
 * isolation.level=read_committed, so a stage in exactly-once mode shows only committed notes, and
 * commits exactly the records it has printed or skipped: at least once, never past a record it
 * stopped at. Options: {@link ConsumerOptions#HELP}.
 */
public final class LinkedNoteConsumer {
  private LinkedNoteConsumer() {}

  public static void main(String[] args) throws IOException {
    // Note and concept ids are UTF-8 in the records; the platform encoding (ASCII under LC_ALL=C) would print '?' for them.
    System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));
    ConsumerOptions options;
    try {
      options = ConsumerOptions.parse(args);
    } catch (ConsumerOptions.UsageException e) {
      System.err.println("cuilink-java-consumer: " + e.getMessage());
      System.err.println(ConsumerOptions.USAGE);
      System.exit(2);
      return;
    }
    if (options.help()) {
      System.out.println(ConsumerOptions.HELP);
      return;
    }
    int code = run(options);
    // Not System.exit(0): after SIGTERM the JVM is already exiting, and exit would wait on the hook that waits on this thread.
    if (code != 0) System.exit(code);
  }

  /** 0 when done (max notes, idle, or stopped by a signal), 1 when it stopped at a record it must not skip, 3 when no broker answered. */
  static int run(ConsumerOptions options) throws IOException {
    LinkedNoteReader reader = new LinkedNoteReader();

    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, options.brokers());
    config.put(ConsumerConfig.GROUP_ID_CONFIG, options.group());
    config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

    long notes = 0;
    long skipped = 0;
    String stoppedAt = null;
    boolean signalled = false;
    try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(config)) {
      // poll() retries unreachable brokers for ever; asking for the topic list once, bounded, makes
      // a wrong --brokers one line and exit 3 as in cuilink's CLI.
      try {
        consumer.listTopics(Duration.ofMillis(options.connectTimeoutMs()));
      } catch (KafkaException e) {
        System.err.println("cuilink-java-consumer: no broker of " + options.brokers() + " answered within " + options.connectTimeoutMs() + " ms (--connect-timeout-ms): " + e.getMessage());
        return 3;
      }
      System.err.printf("reader schema %s fingerprint %s, %d older version(s) known%n", reader.reader.getFullName(), LinkedNoteReader.wireFingerprint(reader.reader), reader.older.size());
      Thread main = Thread.currentThread();
      Thread stopper = new Thread(() -> {
        consumer.wakeup();
        try {
          main.join(10_000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      Runtime.getRuntime().addShutdownHook(stopper);
      consumer.subscribe(List.of(options.topic()));
      long lastRecordAt = System.currentTimeMillis();
      // Offsets to commit: the next record after each one printed or skipped, so a poll's records
      // past --max-notes or past a record it stops at are read again by the next run.
      Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
      try {
        poll:
        while (options.maxNotes() == 0 || notes < options.maxNotes()) {
          ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(500));
          if (records.isEmpty()) {
            if (options.idleExitMs() > 0 && System.currentTimeMillis() - lastRecordAt > options.idleExitMs()) break;
            continue;
          }
          lastRecordAt = System.currentTimeMillis();
          try {
            for (ConsumerRecord<String, byte[]> record : records) {
              String where = record.topic() + "/" + record.partition() + "@" + record.offset();
              if (record.value() != null) {
                LinkedNoteReader.Outcome outcome = reader.read(record.value(), record.headers());
                if (outcome instanceof LinkedNoteReader.Stop stop) {
                  stoppedAt = where + ": " + stop.reason();
                  break poll;
                } else if (outcome instanceof LinkedNoteReader.Skip skip) {
                  System.err.println("skipped " + where + ": " + skip.reason());
                  skipped++;
                } else if (outcome instanceof LinkedNoteReader.Note note) {
                  System.out.println(describe(note.note()));
                  notes++;
                }
              }
              done.put(new TopicPartition(record.topic(), record.partition()), new OffsetAndMetadata(record.offset() + 1));
              if (options.maxNotes() > 0 && notes >= options.maxNotes()) break poll;
            }
          } finally {
            commit(consumer, done);
          }
        }
      } catch (WakeupException e) {
        // Stopped (SIGINT/SIGTERM): close below.
      }
      try {
        Runtime.getRuntime().removeShutdownHook(stopper);
      } catch (IllegalStateException e) {
        signalled = true;
      }
    }
    System.err.printf("read %d LinkedNote(s) from %s, skipped %d%n", notes, options.topic(), skipped);
    if (stoppedAt == null) return 0;
    System.err.println("stopped at " + stoppedAt + "; not committed, so the next run starts there");
    // A signal decides the exit status (143) and the hook is waiting for this thread: no System.exit then.
    return signalled ? 0 : 1;
  }

  /** Prints before it commits: a crash in between prints those notes again (at least once). */
  private static void commit(KafkaConsumer<String, byte[]> consumer, Map<TopicPartition, OffsetAndMetadata> done) {
    System.out.flush();
    if (done.isEmpty()) return;
    consumer.commitSync(done);
    done.clear();
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
}
