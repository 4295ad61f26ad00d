import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { KB_FORMATS } from '../../kb/kb-format.ts';
import { loadKb } from '../../kb/load.ts';
import { createKafkaClient } from '../../stream/kafka-client.ts';
import { createRecordCodec } from '../../stream/avro/create-record-codec.ts';
import { kbOntologyView, loadIndexKb } from '../../eval/kb-ontology-view.ts';
import { startKafkaEvaluator } from '../../eval/sidecar/kafka-evaluator.ts';
import { DEFAULT_MEMORY_VERSIONS } from '../../eval/sidecar/sidecar-evaluator.ts';
import { MEMORY_SPLIT_SEED } from '../../eval/gold-sampling.ts';
import { KB_FLAG_OPTIONS, kbLoadRequest } from '../kb-flags.ts';
import { KAFKA_FLAG_OPTIONS, KAFKA_FLAGS_HELP, kafkaRequest } from '../kafka-flags.ts';

const usage = `Usage: cuilink evaluator (--index DIR | --kb FILE...) [options]

The sidecar evaluator: consumes the LinkedNote topic and the GoldMention topic in its own
consumer group, joins predictions and gold by (note id, mention id) whichever comes first, and
reports acc@1, acc@5, MRR, NIL precision/recall, ontology similarity, nDCG@5 and calibration (ECE
and an analytic calibration test's p, of the links with a calibrated confidence; none without)
over the last N samples and the last T minutes: /metrics (its OpenTelemetry instruments through the Prometheus exporter), /report (JSON)
and /healthz. Windows survive restarts (the state file is written before offsets are committed).
Runs until SIGTERM or SIGINT.

Options:
  --index DIR            the KB is this index's concepts (what the stage links against)
  --kb FILE              or load the KB from files (repeatable; formats as in 'cuilink kb export')
  --kb-supplement FILE   with --kb: an older release whose retired concepts are added (as in 'cuilink kb export')
  --xref-names FILE      with --kb: another vocabulary read for its names only (as in 'cuilink kb export'; repeatable)
  --kb-format NAME       with --kb: force its input format (${KB_FORMATS.join('|')})
  --all-synonyms         with --kb: OBO: keep NARROW and BROAD synonyms too (default EXACT, RELATED)
  --umls-lang L,L        with --kb: UMLS languages (default ENG; 'all' for every language)
  --umls-sab A,B         with --kb: UMLS source vocabularies to keep (default all)
  --umls-tui T047,...    with --kb: UMLS semantic types to keep (default all)
  --umls-keep-suppressed with --kb: keep SUPPRESS=O/E/Y rows
                         (refused unless a --kb file is UMLS, for --all-synonyms OBO or OBO-Graph)
  --linked-topic T       LinkedNote topic (default cuilink.linked)
  --gold-topic T         GoldMention topic (default cuilink.gold)
  --group ID             consumer group (default cuilink-evaluator)
  --state FILE           state file (default cuilink-evaluator-state.json)
  --window-count N       count window: last N joined samples (default 1000)
  --window-minutes T     time window: samples joined in the last T minutes (default 60)
  --ttl-minutes M        an unmatched gold or prediction waits this long (default 30)
  --max-pending N        unmatched gold + predictions kept at most (default 100000)
  --floor A              alert when acc@1 falls below A
  --baseline A           expected acc@1 (e.g. the offline 'cuilink eval' figure) ...
  --margin D             ... alert when acc@1 is more than D below it (default 0.05)
  --calibration-alpha A  alert when the window's calibration test (χ² over the reliability bins,
                         grouped as offline eval's calibrated floor) gives p < A, 0 < A < 1 (e.g.
                         0.01): the confidence has drifted from acc@1 by more than noise (default off)
  --min-samples N        with --floor, --baseline or --calibration-alpha: alerts judge a window only
                         once it holds N samples, for the calibration test N with a calibrated
                         confidence and never under 200 (default 50)
  --snapshot-seconds S   write the state file (then commit) at most this often (default 5)
  --learn-fraction F     a memory updater learns this share of notes (cuilink memory updater): score
                         only the other, *measure* stream, so learned mentions are never measured
  --split-seed N         seed of that learn/measure split (default the updater's)
  --memory-versions N    report acc@1 by memory version for the newest N versions (default ${DEFAULT_MEMORY_VERSIONS});
                         older ones are folded together
  --port P               HTTP port (default 9465; 0 picks a free one)
  --host H               HTTP host (default 0.0.0.0)
${KAFKA_FLAGS_HELP}
  -h, --help             this text`;

export const evaluator: Command = {
  name: 'evaluator',
  summary: 'Sidecar evaluator: rolling accuracy of the linked topic against sampled gold',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...KAFKA_FLAG_OPTIONS,
      ...KB_FLAG_OPTIONS,
      index: { type: 'string' },
      'linked-topic': { type: 'string' },
      'gold-topic': { type: 'string' },
      group: { type: 'string' },
      state: { type: 'string' },
      'window-count': { type: 'string' },
      'window-minutes': { type: 'string' },
      'ttl-minutes': { type: 'string' },
      'max-pending': { type: 'string' },
      floor: { type: 'string' },
      baseline: { type: 'string' },
      margin: { type: 'string' },
      'calibration-alpha': { type: 'string' },
      'min-samples': { type: 'string' },
      'snapshot-seconds': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'learn-fraction': { type: 'string' },
      'split-seed': { type: 'string' },
      'memory-versions': { type: 'string' },
    });
    if (values['split-seed'] !== undefined && values['learn-fraction'] === undefined) throw new InputError('--split-seed: only with --learn-fraction F', 'BAD_FLAGS');
    if (values.margin !== undefined && values.baseline === undefined) throw new InputError('--margin: only with --baseline A', 'BAD_FLAGS');
    if (values['min-samples'] !== undefined && values.floor === undefined && values.baseline === undefined && values['calibration-alpha'] === undefined) {
      throw new InputError('--min-samples: only with --floor A, --baseline A or --calibration-alpha A (it sets when the alerts judge a window)', 'BAD_FLAGS');
    }
    const measure = values['learn-fraction'] === undefined ? undefined : { learnFraction: parseNumberFlag(values['learn-fraction'], 'learn-fraction', 0.5, { min: 0, max: 1 }), seed: parseNumberFlag(values['split-seed'], 'split-seed', MEMORY_SPLIT_SEED, { integer: true }) };
    if ((values.index === undefined) === ((values.kb ?? []).length === 0)) throw new InputError('give the KB with exactly one of --index DIR or --kb FILE', 'BAD_FLAGS');
    for (const flag of ['kb-supplement', 'xref-names', 'kb-format', 'all-synonyms', 'umls-lang', 'umls-sab', 'umls-tui', 'umls-keep-suppressed'] as const) {
      const value = values[flag];
      const given = Array.isArray(value) ? value.length > 0 : value !== undefined && value !== false;
      if (values.index !== undefined && given) throw new InputError(`--${flag} goes with --kb: an index already holds its KB`, 'BAD_FLAGS');
    }
    const lastN = parseNumberFlag(values['window-count'], 'window-count', 1000, { min: 1, integer: true });
    const lastMs = parseNumberFlag(values['window-minutes'], 'window-minutes', 60, { above: 0 }) * 60_000;
    const ttlMs = parseNumberFlag(values['ttl-minutes'], 'ttl-minutes', 30, { above: 0 }) * 60_000;
    const maxPending = parseNumberFlag(values['max-pending'], 'max-pending', 100_000, { min: 1, integer: true });
    const floor = values.floor === undefined ? undefined : parseNumberFlag(values.floor, 'floor', 0, { min: 0, max: 1 });
    const baseline = values.baseline === undefined ? undefined : parseNumberFlag(values.baseline, 'baseline', 0, { min: 0, max: 1 });
    const margin = parseNumberFlag(values.margin, 'margin', 0.05, { min: 0, max: 1 });
    // 0 would never fire and 1 would always: neither is a test.
    const calibrationAlpha = values['calibration-alpha'] === undefined ? undefined : parseNumberFlag(values['calibration-alpha'], 'calibration-alpha', 0, { above: 0, below: 1 });
    const minSamples = parseNumberFlag(values['min-samples'], 'min-samples', 50, { min: 1, integer: true });
    const snapshotIntervalMs = parseNumberFlag(values['snapshot-seconds'], 'snapshot-seconds', 5, { min: 0.1 }) * 1000;
    const port = parseNumberFlag(values.port, 'port', 9465, { min: 0, max: 65535, integer: true });
    const memoryVersions = parseNumberFlag(values['memory-versions'], 'memory-versions', DEFAULT_MEMORY_VERSIONS, { min: 1, max: 1000, integer: true });
    const { connection, schemaRegistry } = kafkaRequest(values, 'cuilink-evaluator');
    const linkedTopic = values['linked-topic'] ?? 'cuilink.linked';
    const goldTopic = values['gold-topic'] ?? 'cuilink.gold';
    if (linkedTopic === goldTopic) throw new InputError('--linked-topic and --gold-topic must differ', 'BAD_FLAGS');

    const store = values.index !== undefined ? await loadIndexKb(values.index) : await (async () => {
      const kb = kbLoadRequest(values);
      return loadKb(kb.paths, kb.options);
    })();
    const log = (line: string): void => {
      process.stderr.write(`${line}\n`);
    };
    const running = await startKafkaEvaluator(kbOntologyView(store), {
      kafka: createKafkaClient(connection),
      codec: createRecordCodec({ schemaRegistry }),
      linkedTopic,
      goldTopic,
      groupId: values.group ?? 'cuilink-evaluator',
      stateFile: values.state ?? 'cuilink-evaluator-state.json',
      snapshotIntervalMs,
      port,
      host: values.host ?? '0.0.0.0',
      joiner: { ttlMs, maxPending },
      windows: { lastN, lastMs },
      alerts: { floor, baseline, margin: baseline === undefined ? undefined : margin, calibrationAlpha, minSamples },
      measure,
      memoryVersions,
      log,
    });
    log(`evaluator: ${linkedTopic} + ${goldTopic} (group ${values.group ?? 'cuilink-evaluator'}); report at ${running.url}/report, metrics at ${running.url}/metrics`);
    log(measure ? `evaluator: scoring the measure stream only (--learn-fraction ${measure.learnFraction} learned by the memory, --split-seed ${measure.seed})` : 'evaluator: no learn/measure split: every gold label is scored');
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    log('evaluator: stopping (final snapshot and commit)');
    await running.stop();
    return 0;
  },
};
