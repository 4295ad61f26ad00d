import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag, requireString } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { ENCODER_FLAG_OPTIONS, ENCODER_FLAGS_HELP, encoderRequest } from '../encoder-flags.ts';
import { KAFKA_FLAG_OPTIONS, KAFKA_FLAGS_HELP, kafkaRequest } from '../kafka-flags.ts';
import { BiEncoder } from '../../encode/bi-encoder.ts';
import { readIndexManifest } from '../../retrieve/index-manifest.ts';
import { resolveIndexDir } from '../../retrieve/index-versions.ts';
import { DEFAULT_MODEL_DIR } from '../../link/default-index.ts';
import { MemoryLearner } from '../../link/memory-learner.ts';
import { createKafkaClient } from '../../stream/kafka-client.ts';
import { createRecordCodec } from '../../stream/avro/create-record-codec.ts';
import { MEMORY_SPLIT_SEED } from '../../eval/gold-sampling.ts';
import { MemoryUpdater } from '../../eval/memory-updater.ts';
import { startMemoryUpdaterHttp, type MemoryUpdaterHttp } from '../memory-updater-http.ts';

const usage = `Usage: cuilink memory updater --memory ROOT --learn-fraction F [options]

The online memory updater: consumes the notes topic and the gold topic (what 'cuilink gold-sample'
and reviewers publish), learns the gold labels of notes in the *learn* stream (a deterministic
draw per note id: --learn-fraction of the notes; the rest is the evaluator's *measure* stream and
is never learned), and publishes a new memory version at most every --flush-ms: written
completely beside the old ones, then ROOT/CURRENT renamed over. Linkers started with --memory
ROOT (or CUILINK_MEMORY=ROOT) poll CURRENT and swap without a restart. Runs until SIGTERM/SIGINT.
The split is a choice with no default: every note's gold either teaches the memory or measures
the linker, never both (1 learns all gold and leaves nothing to measure; give 'cuilink evaluator'
the same fraction and seed). It is logged at start.

Options:
  --memory ROOT          memory root (created on the first label)
  --learn-fraction F     required: share of notes (0 to 1) whose gold is learned; the rest is measured
  --notes-topic T        NoteEvent topic the gold refers to (default cuilink.notes)
  --gold-topic T         GoldMention topic (default cuilink.gold)
  --group ID             consumer group (default cuilink-memory-updater)
  --split-seed N         seed of the learn/measure split (default ${MEMORY_SPLIT_SEED}; the evaluator must use the same)
  --flush-ms N           a new snapshot at most this often while labels arrive (default 2000)
  --index DIR            take the bi-encoder from this index (the one the linkers use)
  --model DIR            bi-encoder directory (default: the index's, else ${DEFAULT_MODEL_DIR})
  --no-raw-text          a new memory keeps no mention text, context or note id, only keyed hashes
                         (docs/memory.md); an existing memory keeps its mode, and --no-raw-text on one
                         that keeps raw text is refused
  --port P               serve /healthz, /readyz and /metrics (Prometheus) on this port (0 picks a free one);
                         none without it. /healthz is 503 until the model is loaded and the consumer runs,
                         after a fatal error, and while snapshots keep failing
  --host H               HTTP host (default 0.0.0.0)
${ENCODER_FLAGS_HELP}
${KAFKA_FLAGS_HELP}
  -h, --help             this text`;

export const memoryUpdater: Command = {
  name: 'memory updater',
  summary: 'Online: learn gold labels from the gold topic into a memory, publishing new versions',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...KAFKA_FLAG_OPTIONS,
      ...ENCODER_FLAG_OPTIONS,
      memory: { type: 'string' },
      'notes-topic': { type: 'string' },
      'gold-topic': { type: 'string' },
      group: { type: 'string' },
      'learn-fraction': { type: 'string' },
      'split-seed': { type: 'string' },
      'flush-ms': { type: 'string' },
      index: { type: 'string' },
      model: { type: 'string' },
      'no-raw-text': { type: 'boolean', default: false },
      port: { type: 'string' },
      host: { type: 'string' },
    });
    const root = requireString(values.memory, 'memory');
    // No default: a silent 0.5 left half of the gold unlearned without anyone having chosen so.
    if (values['learn-fraction'] === undefined) throw new InputError('missing required flag --learn-fraction F: the share of notes whose gold the memory learns (the rest is measured; 1 learns all)', 'BAD_FLAGS');
    const learnFraction = parseNumberFlag(values['learn-fraction'], 'learn-fraction', 0, { min: 0, max: 1 });
    const splitSeed = parseNumberFlag(values['split-seed'], 'split-seed', MEMORY_SPLIT_SEED, { integer: true });
    const flushMs = parseNumberFlag(values['flush-ms'], 'flush-ms', 2000, { min: 10, integer: true });
    const port = values.port === undefined ? undefined : parseNumberFlag(values.port, 'port', 0, { min: 0, max: 65535, integer: true });
    if (values.host !== undefined && port === undefined) throw new InputError('--host goes with --port: without a port nothing is served', 'BAD_FLAGS');
    const notesTopic = values['notes-topic'] ?? 'cuilink.notes';
    const goldTopic = values['gold-topic'] ?? 'cuilink.gold';
    // One topic for both would decode every note as gold: no note would be read, nothing learned.
    if (notesTopic === goldTopic) throw new InputError('--notes-topic and --gold-topic must differ', 'BAD_FLAGS');
    const { connection, schemaRegistry } = kafkaRequest(values, 'cuilink-memory-updater');
    const log = (line: string): void => {
      process.stderr.write(`${line}\n`);
    };
    log(`memory-updater: learn/measure split: learning the gold of ${percent(learnFraction)} of notes (--learn-fraction ${learnFraction}, --split-seed ${splitSeed}), measuring the other ${percent(1 - learnFraction)}; memory ${root}`);
    let updater: MemoryUpdater | undefined;
    // Before the model loads: a startup probe sees 503 (not refused) and gives the load its time.
    const http: MemoryUpdaterHttp | undefined = port === undefined ? undefined : await startMemoryUpdaterHttp({ host: values.host ?? '0.0.0.0', port, updater: () => updater, log });
    if (http) log(`memory-updater: serving /healthz, /readyz and /metrics at ${http.url}`);
    try {
      return await runUpdater();
    } finally {
      await http?.close();
    }

    async function runUpdater(): Promise<number> {
      const modelDir = values.model ?? (values.index !== undefined ? readIndexManifest(resolveIndexDir(values.index).dir).model.path : DEFAULT_MODEL_DIR);
      const encoder = await BiEncoder.open(modelDir, encoderRequest(values));
      let started: MemoryUpdater;
      try {
        started = new MemoryUpdater({
          kafka: createKafkaClient(connection),
          codec: createRecordCodec({ schemaRegistry }),
          notesTopic,
          goldTopic,
          groupId: values.group ?? 'cuilink-memory-updater',
          root,
          learner: new MemoryLearner(encoder),
          ...(values['no-raw-text'] ? { rawText: false } : {}),
          learnFraction,
          splitSeed,
          flushMs,
          log,
        });
      } catch (error) {
        // A refused memory (another model, mixed raw-text modes) ends here: the encoder's workers must not keep the process.
        await encoder.close();
        throw error;
      }
      updater = started;
      try {
        await started.start();
        const stopped = new Promise<void>((resolve) => {
          process.once('SIGTERM', resolve);
          process.once('SIGINT', resolve);
        });
        try {
          await Promise.race([stopped, started.failed]);
        } catch (error) {
          log(`memory-updater: ${(error as { code?: string }).code === 'CONSUMER_FAILED' ? 'consumer failed' : 'snapshot failed'} (${failureReason(error)}); exiting non-zero, a restart resumes from the memory on disk`);
          return 1;
        }
        log('memory-updater: stopping (final snapshot)');
        try {
          await started.stop();
        } catch (error) {
          // The labels since the last snapshot are not lost: nothing is committed, a restart reads them again.
          log(`memory-updater: final snapshot failed (${failureReason(error)}); exiting non-zero, a restart resumes from the memory on disk`);
          return 1;
        }
      } finally {
        await encoder.close();
      }
      return 0;
    }
  },
};

/**
 * Why a snapshot failed, in words that hold no note text: the error's code, and for a file-system
 * error the call and the path it refused (a disk that is full, read-only or gone says so).
 */
function failureReason(error: unknown): string {
  const { code, syscall, path } = error as { code?: string; syscall?: string; path?: string };
  const where = syscall !== undefined && path !== undefined ? `: ${syscall} ${path}` : '';
  return `${code ?? 'MEMORY_UPDATE_FAILED'}${where}`;
}

/** 0.25 → "25%", 1/3 → "33.3%": enough digits to tell a chosen fraction from a rounded one. */
function percent(fraction: number): string {
  return `${Number((fraction * 100).toFixed(1))}%`;
}
