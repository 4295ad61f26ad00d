package org.cuilink.examples;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The consumer's command line, parsed strictly as cuilink's own CLI parses its flags
 * (src/cli/args.ts): an unknown option, a missing value, an option given twice or a malformed
 * number is a {@link UsageException} naming it, so a misspelt option stops the run (exit 2) instead
 * of being ignored while the consumer prints everything.
 */
record ConsumerOptions(String brokers, String topic, String group, long maxNotes, long idleExitMs, long connectTimeoutMs, boolean help) {
  /** As long as cuilink's own CLI may take to give up on unreachable brokers (exit 3), not for ever. */
  static final long DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

  static final String USAGE = "usage: java -jar cuilink-java-consumer.jar --brokers HOST:PORT[,...] [--topic T] [--group G] [--max-notes N] [--idle-exit-ms MS] [--connect-timeout-ms MS]";
  static final String HELP = String.join("\n",
      USAGE,
      "",
      "Prints one line per LinkedNote of cuilink's output topic (read_committed): n-0001: m1 -> HP:0001250, m2 -> NIL",
      "  --brokers HOST:PORT[,...]  bootstrap brokers (required)",
      "  --topic T                  the stage's topics.output (default cuilink.linked)",
      "  --group G                  consumer group (default cuilink-java-consumer)",
      "  --max-notes N              exit after N notes, committing no further (default: run until stopped)",
      "  --idle-exit-ms MS          exit when nothing arrived for MS milliseconds (default: never)",
      "  --connect-timeout-ms MS    exit 3 when no broker answered within MS milliseconds at start (default " + DEFAULT_CONNECT_TIMEOUT_MS + ")",
      "Exit codes: 0 done, 1 stopped at a record this build cannot read (nothing past it committed), 2 bad options, 3 no broker reachable.");

  private static final List<String> NAMES = List.of("brokers", "topic", "group", "max-notes", "idle-exit-ms", "connect-timeout-ms");

  static final class UsageException extends Exception {
    UsageException(String message) {
      super(message);
    }
  }

  /** Reads {@code --name value} and {@code --name=value}; {@code --help} or {@code -h} alone asks for the help text. */
  static ConsumerOptions parse(String[] args) throws UsageException {
    Map<String, String> values = new HashMap<>();
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (arg.equals("--help") || arg.equals("-h")) return new ConsumerOptions(null, null, null, 0, 0, 0, true);
      if (!arg.startsWith("--")) throw new UsageException("unexpected argument '" + arg + "' (options are --name value)");
      int equals = arg.indexOf('=');
      String name = arg.substring(2, equals < 0 ? arg.length() : equals);
      if (!NAMES.contains(name)) throw new UsageException("unknown option --" + name);
      String value;
      if (equals >= 0) {
        value = arg.substring(equals + 1);
      } else if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
        value = args[++i];
      } else {
        // `--brokers --topic t` would otherwise read "--topic" as the broker list.
        throw new UsageException("--" + name + " needs a value" + (i + 1 < args.length ? ", got the option " + args[i + 1] : ""));
      }
      if (values.putIfAbsent(name, value) != null) throw new UsageException("--" + name + " given more than once (it takes one value)");
    }
    String brokers = values.get("brokers");
    if (brokers == null || brokers.isBlank()) throw new UsageException("missing required option --brokers");
    return new ConsumerOptions(
        brokers,
        nonEmpty(values, "topic", "cuilink.linked"),
        nonEmpty(values, "group", "cuilink-java-consumer"),
        positiveWholeNumber(values, "max-notes"),
        positiveWholeNumber(values, "idle-exit-ms"),
        values.containsKey("connect-timeout-ms") ? positiveWholeNumber(values, "connect-timeout-ms") : DEFAULT_CONNECT_TIMEOUT_MS,
        false);
  }

  private static String nonEmpty(Map<String, String> values, String name, String fallback) throws UsageException {
    String value = values.getOrDefault(name, fallback);
    if (value.isBlank()) throw new UsageException("--" + name + " must not be empty");
    return value;
  }

  /** 0 when not given (no limit). */
  private static long positiveWholeNumber(Map<String, String> values, String name) throws UsageException {
    String value = values.get(name);
    if (value == null) return 0;
    long n;
    try {
      n = Long.parseLong(value);
    } catch (NumberFormatException e) {
      throw new UsageException("--" + name + " must be a whole number, got '" + value + "'");
    }
    if (n < 1) throw new UsageException("--" + name + " must be at least 1, got " + n);
    return n;
  }
}
