import { readFileSync } from 'node:fs';
import type { Command } from '../command.ts';
import { parseFlags } from '../args.ts';
import { KAFKA_FLAG_OPTIONS, KAFKA_FLAGS_HELP, kafkaRequest } from '../kafka-flags.ts';
import { requireIndexFlag } from '../linker-flags.ts';
import { InputError } from '../../kb/errors.ts';
import { createKafkaClient } from '../../stream/kafka-client.ts';
import type { KafkaClient } from '../../stream/kafka/client-types.ts';
import { createRecordCodec } from '../../stream/avro/create-record-codec.ts';
import type { RecordCodec } from '../../stream/avro/record-codec.ts';
import { requireTopics } from '../../stream/topics.ts';
import { loadIndexKb } from '../../eval/kb-ontology-view.ts';
import { TaskLedger } from '../../eval/annotation/task-ledger.ts';
import { AnnotationJudge } from '../../eval/annotation/annotation-judge.ts';
import { importLabelStudioExport, importPlainAnswers, type ImportResult } from '../../eval/annotation/annotation-import.ts';
import { REFUSAL_KINDS, formatRefusal } from '../../eval/annotation/refusal.ts';
import { goldLine, nilLine } from '../../eval/annotation/gold-line.ts';
import { writeJsonItems } from '../../eval/annotation/json-output.ts';
import { publishAnnotatedGold } from '../../eval/annotation/annotated-gold-publisher.ts';
import { checkWritable, refuseClobbering } from '../output-files.ts';

const usage = `Usage: cuilink annotate import (--export FILE | --jsonl FILE) --tasks FILE --index DIR
                               (--out FILE | --gold-topic T) [options]

Reads annotators' answers back as gold mentions: a Label Studio export (JSON or JSON-MIN) of the
tasks 'cuilink annotate export' wrote, or plain JSON lines {"noteId", "mentionId", "ids": [..] |
"conceptId", "nil"?, "annotator"?}. Each answer is checked against the tasks file (the request
must have been exported, the span must be the requested one, a ticked choice one of its
candidates) and the index's KB (every concept id must be one of its concepts); the first valid
answer of a request is taken. docs/annotation.md.

An answer that fails is refused on stderr as 'line N / task T: reason' and the others are kept.
NIL answers ('none of these') are counted and written to --nil-out, never to the gold file or
topic (the memory cannot learn "no concept"). Exit code 3 when no answer was valid; 2 for a bad
flag or an unreadable file.

Options:
  --export FILE          Label Studio export, JSON or JSON-MIN ("Export" in the project)
  --jsonl FILE           or plain JSONL answers
  --tasks FILE           the tasks file(s) 'annotate export' wrote (--tasks or --jsonl form; repeatable)
  --index DIR            index whose KB the concept ids must belong to (ids are stored as its primary ids)
  --out FILE             write the gold JSONL ('cuilink memory add --jsonl' reads it; 'stream' says learn or measure)
  --nil-out FILE         write the NIL answers as JSON lines
  --gold-topic T         publish the gold as GoldMention records (keyed by note id) to this topic
  --annotator NAME       annotator of answers that name none
${KAFKA_FLAGS_HELP}
  -h, --help             this text`;

function summary(result: ImportResult, gold: number, nil: number, learn: number): string {
  const kinds = REFUSAL_KINDS.map((k) => [k, result.refused.filter((r) => r.kind === k).length] as const).filter(([, n]) => n > 0);
  return (
    `${result.tasks} tasks, ${result.annotations} answers: ${gold} gold (learn ${learn}, measure ${gold - learn}), ${nil} NIL, ` +
    `${result.refused.length} refused${kinds.length > 0 ? ` (${kinds.map(([k, n]) => `${k} ${n}`).join(', ')})` : ''}${result.unannotated > 0 ? `, ${result.unannotated} not annotated yet` : ''}`
  );
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read ${file}: ${(error as Error).message}`, 'INPUT_NOT_FOUND', error);
  }
}

export const annotateImport: Command = {
  name: 'annotate import',
  summary: 'Label Studio export (or JSONL answers) → gold mentions: gold JSONL and/or the gold topic',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...KAFKA_FLAG_OPTIONS,
      export: { type: 'string' },
      jsonl: { type: 'string' },
      tasks: { type: 'string', multiple: true },
      index: { type: 'string' },
      out: { type: 'string' },
      'nil-out': { type: 'string' },
      'gold-topic': { type: 'string' },
      annotator: { type: 'string' },
    });
    if ((values.export === undefined) === (values.jsonl === undefined)) throw new InputError('give exactly one of --export or --jsonl', 'BAD_FLAGS');
    if (values.tasks === undefined || values.tasks.length === 0) throw new InputError('missing required flag --tasks (the tasks file annotate export wrote)', 'BAD_FLAGS');
    const indexDir = requireIndexFlag(values.index, 'annotate import');
    if (values.out === undefined && values['gold-topic'] === undefined) throw new InputError('give --out FILE and/or --gold-topic T: the gold would go nowhere', 'BAD_FLAGS');
    const outputs = [['out', values.out], ['nil-out', values['nil-out']]] as const;
    refuseClobbering(outputs, [['export', values.export], ['jsonl', values.jsonl], ...values.tasks.map((t) => ['tasks', t] as const)]);
    for (const [flag, path] of outputs) if (path !== undefined) checkWritable(path, flag);
    // Flags, and the gold topic's existence, are checked before the (slow) KB load: a typo fails in a second.
    let publisher: { kafka: KafkaClient; codec: RecordCodec; topic: string } | undefined;
    if (values['gold-topic'] !== undefined) {
      const { connection, schemaRegistry } = kafkaRequest(values, 'cuilink-annotate-import');
      publisher = { kafka: createKafkaClient(connection), codec: createRecordCodec({ schemaRegistry }), topic: values['gold-topic'] };
      await requireTopics(publisher.kafka, [publisher.topic]);
    }

    const ledger = new TaskLedger();
    for (const file of values.tasks) ledger.addFile(file, readText(file));
    const judge = new AnnotationJudge(ledger, await loadIndexKb(indexDir));
    const result = values.export !== undefined ? importLabelStudioExport(values.export, readText(values.export), judge) : importPlainAnswers(readText(values.jsonl!), judge);
    for (const r of result.refused) console.error(`annotate import: ${formatRefusal(r)}`);
    for (const label of result.accepted) label.annotator ??= values.annotator ?? null;

    const source = values.export !== undefined ? 'label-studio' : 'annotation-jsonl';
    const gold = result.accepted.filter((a) => !a.nil);
    const nil = result.accepted.filter((a) => a.nil);
    const learn = gold.filter((a) => a.stream === 'learn').length;
    const written: string[] = [];
    // Files are written even when empty, so a script never reads a previous run's gold as this one's.
    if (values.out !== undefined) written.push(`${await writeJsonItems(values.out, gold.map((g) => goldLine(g, source)), 'lines')} gold → ${values.out}`);
    if (values['nil-out'] !== undefined) written.push(`${await writeJsonItems(values['nil-out'], nil.map((n) => nilLine(n, source)), 'lines')} NIL → ${values['nil-out']}`);
    if (publisher !== undefined && gold.length > 0) written.push(`${await publishAnnotatedGold(publisher.kafka, publisher.codec, publisher.topic, gold)} gold → topic ${publisher.topic}`);
    console.log(`annotate import: ${summary(result, gold.length, nil.length, learn)}${written.length > 0 ? `; ${written.join(', ')}` : ''}`);
    return result.accepted.length > 0 ? 0 : 3;
  },
};
