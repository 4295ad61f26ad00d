import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag, parseTypesFlag, requireString } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { createKafkaClient } from '../../stream/kafka-client.ts';
import { createRecordCodec } from '../../stream/avro/create-record-codec.ts';
import { ensureTopics, requireTopics } from '../../stream/topics.ts';
import { checkGoldCorpus, publishGoldSample } from '../../eval/gold-publisher.ts';
import { readRequestedMentions } from '../../eval/review-reader.ts';
import { KAFKA_FLAG_OPTIONS, KAFKA_FLAGS_HELP, kafkaRequest } from '../kafka-flags.ts';

const usage = `Usage: cuilink gold-sample --corpus FILE.PubTator (--fraction F | --review-topic T | --request-topic T) [options]

Samples a fraction of a PubTator corpus's annotated notes (a deterministic draw per note id and
seed, the same in every run) and publishes their gold mentions (GoldMention Avro, keyed by note
id) to the gold topic; with --notes-topic also publishes every annotated note (NoteEvent Avro,
its annotations as NER mentions) to the stage's input topic. For demos, tests and benchmarks of
'cuilink evaluator'.

Options:
  --corpus FILE          PubTator corpus (may be gzipped); the 'cuilink eval' protocol applies
                         (a label naming more than 64 ids, which the gold topic's readers
                         refuse, refuses the corpus before any topic is created or published to)
  --fraction F           share of notes whose gold is published, 0..1
  --review-topic T       instead of --fraction: publish the gold of exactly the mentions the stage
                         sent to this review topic (ReviewMention records, read to their end)
  --request-topic T      instead of --fraction: publish the gold of exactly the mentions the stage
                         asked labels for on this topic (LabelRequest records, read to their end:
                         topics.labelRequests or topics.measureRequests; an annotator that answers).
                         With either, a record that does not decode is left out, counted on stderr
  --seed N               sampling seed of --fraction (default 1)
  --gold-topic T         gold topic (default cuilink.gold)
  --notes-topic T        also publish the notes to this input topic (e.g. cuilink.notes)
  --types REGEX          keep only annotations whose type matches
  --annotator NAME       annotator recorded on each gold mention
  --create-topics        create missing topics (with --partitions, default 1) instead of failing
  --partitions N         partitions of created topics
${KAFKA_FLAGS_HELP}
  -h, --help             this text`;

export const goldSample: Command = {
  name: 'gold-sample',
  summary: 'Publish the gold mentions (and optionally the notes) of a sampled PubTator corpus to Kafka',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...KAFKA_FLAG_OPTIONS,
      corpus: { type: 'string' },
      fraction: { type: 'string' },
      'review-topic': { type: 'string' },
      'request-topic': { type: 'string' },
      seed: { type: 'string' },
      'gold-topic': { type: 'string' },
      'notes-topic': { type: 'string' },
      types: { type: 'string' },
      annotator: { type: 'string' },
      'create-topics': { type: 'boolean', default: false },
      partitions: { type: 'string' },
    });
    const corpusFile = requireString(values.corpus, 'corpus');
    const reviewTopic = values['review-topic'];
    const requestTopic = values['request-topic'];
    const asked = reviewTopic !== undefined ? { topic: reviewTopic, kind: 'ReviewMention' as const } : requestTopic !== undefined ? { topic: requestTopic, kind: 'LabelRequest' as const } : undefined;
    if ([reviewTopic, requestTopic, values.fraction].filter((v) => v !== undefined).length !== 1) throw new InputError('give exactly one of --fraction, --review-topic or --request-topic', 'BAD_FLAGS');
    const fraction = asked === undefined ? parseNumberFlag(values.fraction, 'fraction', 1, { min: 0, max: 1 }) : 0;
    if (asked !== undefined && values.seed !== undefined) throw new InputError('--seed: only with --fraction (it draws the sample; --review-topic and --request-topic name the mentions)', 'BAD_FLAGS');
    const seed = parseNumberFlag(values.seed, 'seed', 1, { integer: true });
    if (values.partitions !== undefined && !values['create-topics']) throw new InputError('--partitions: only with --create-topics (it sizes the topics that creates)', 'BAD_FLAGS');
    const partitions = parseNumberFlag(values.partitions, 'partitions', 1, { min: 1, integer: true });
    const goldTopic = values['gold-topic'] ?? 'cuilink.gold';
    const notesTopic = values['notes-topic'];
    if (notesTopic === goldTopic) throw new InputError('--notes-topic and --gold-topic must differ', 'BAD_FLAGS');
    const types = parseTypesFlag(values.types);
    const { connection, schemaRegistry } = kafkaRequest(values, 'cuilink-gold-sample');
    const kafka = createKafkaClient(connection);
    if (asked !== undefined && (asked.topic === goldTopic || asked.topic === notesTopic)) throw new InputError(`--${asked.kind === 'ReviewMention' ? 'review' : 'request'}-topic must differ from the gold and notes topics`, 'BAD_FLAGS');
    // Before the broker is touched: a refused corpus must not leave topics --create-topics made.
    const corpus = await checkGoldCorpus(corpusFile, types);
    const topics = notesTopic === undefined ? [goldTopic] : [goldTopic, notesTopic];
    if (values['create-topics']) await ensureTopics(kafka, topics, { partitions });
    else await requireTopics(kafka, topics);
    const codec = createRecordCodec({ schemaRegistry });
    let onlyMentions: Set<string> | undefined;
    if (asked !== undefined) {
      await requireTopics(kafka, [asked.topic]);
      const read = await readRequestedMentions(kafka, codec, asked.topic, asked.kind);
      onlyMentions = read.mentions;
      if (read.refused.length > 0) {
        const first = read.refused[0]!;
        console.error(`gold-sample: ${read.refused.length} record${read.refused.length === 1 ? '' : 's'} of ${asked.topic} could not be read as ${asked.kind} and ${read.refused.length === 1 ? 'was' : 'were'} left out (first at ${first.where}: ${first.code})`);
      }
    }
    const result = await publishGoldSample({ kafka, codec, corpus, fraction, seed, goldTopic, notesTopic, annotator: values.annotator, onlyMentions });
    // Nothing sampled is no error (the stage may have been sure of every mention), but "0 sampled" alone does not say which of the two inputs to check.
    if (asked !== undefined && result.goldPublished === 0) {
      const what = asked.kind === 'ReviewMention' ? 'unsure (NIL or under review.belowConfidence)' : 'chosen for labels';
      if (onlyMentions!.size === 0) console.error(`gold-sample: ${asked.topic} holds no record: the stage has not linked these notes yet, found none of their mentions ${what}, or writes to another topic`);
      else console.error(`gold-sample: none of the ${onlyMentions!.size} mentions on ${asked.topic} is an annotation of ${corpusFile} (matched by note id and mention id start-end): give the corpus whose notes the stage linked (published with --notes-topic)`);
    }
    console.log(
      `${corpusFile}: ${result.notes} annotated notes, ${result.sampledNotes} sampled (${asked === undefined ? `fraction ${fraction}, seed ${seed}` : `${onlyMentions!.size} mentions on ${asked.topic}`}); ` +
        `${result.goldPublished} gold mentions → ${goldTopic}${notesTopic === undefined ? '' : `, ${result.notesPublished} notes → ${notesTopic}`}`,
    );
    return 0;
  },
};
