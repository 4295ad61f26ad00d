import { writeFileSync } from 'node:fs';
import type { Command } from '../command.ts';
import { parseFlags } from '../args.ts';
import { KAFKA_FLAG_OPTIONS, KAFKA_FLAGS_HELP, kafkaRequest } from '../kafka-flags.ts';
import { InputError } from '../../kb/errors.ts';
import { createKafkaClient } from '../../stream/kafka-client.ts';
import { createRecordCodec } from '../../stream/avro/create-record-codec.ts';
import { requireTopics } from '../../stream/topics.ts';
import { readLabelRequestFile, type RequestBatch } from '../../eval/annotation/label-request-file.ts';
import { readLabelRequestTopic } from '../../eval/annotation/label-request-topic.ts';
import { readNoteJsonl, readPubTatorNotes } from '../../eval/annotation/note-text-source.ts';
import { joinRequestsToNotes } from '../../eval/annotation/request-note-join.ts';
import { buildLabelStudioTask } from '../../eval/annotation/label-studio-task.ts';
import { buildPlainTaskLine } from '../../eval/annotation/plain-task-line.ts';
import { LABELING_CONFIG } from '../../eval/annotation/labeling-config.ts';
import { writeJsonItems } from '../../eval/annotation/json-output.ts';
import { checkWritable, refuseClobbering } from '../output-files.ts';

const usage = `Usage: cuilink annotate export (--requests FILE | --request-topic T…) (--corpus FILE | --notes FILE)
                               (--tasks FILE | --jsonl FILE) [options]

Turns the stage's label requests (LabelRequest records: a mention to label, no text) into
annotation tasks: each request is joined to its note by note id, and written as a Label Studio
task (the note, the mention's span pre-annotated, the linker's candidates as choices, 'none of
these / NIL', a free concept id field) and/or as a plain JSON line for scripts. Keep the tasks
file: 'cuilink annotate import --tasks' checks every answer against it. docs/annotation.md.

A request whose note is missing, whose span is outside its note or differs from the note's
mention, or that repeats an earlier one is refused on stderr with its line (or partition and
offset) and the reason; the others are written. Exit code 3 when no task was written.

Options:
  --requests FILE        LabelRequest JSON lines (the Avro record's fields, requestedAt in epoch ms)
  --request-topic T      or read LabelRequest topics from their start to their current end
                         (repeatable: the stage's topics.labelRequests and topics.measureRequests)
  --corpus FILE          notes from a PubTator corpus (note id = PMID, text = title + ' ' + abstract)
  --notes FILE           or notes as 'cuilink link' reads them: NoteEvent JSON lines
  --tasks FILE           write the Label Studio tasks (a JSON array, one task per line)
  --config FILE          write the labeling config those tasks need (XML; also docs/examples/label-studio-config.xml)
  --jsonl FILE           write the plain JSONL tasks (mention text, note text, candidates)
${KAFKA_FLAGS_HELP}
  -h, --help             this text`;

export const annotateExport: Command = {
  name: 'annotate export',
  summary: 'Label requests → Label Studio tasks (and plain JSONL) for annotators',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...KAFKA_FLAG_OPTIONS,
      requests: { type: 'string' },
      'request-topic': { type: 'string', multiple: true },
      corpus: { type: 'string' },
      notes: { type: 'string' },
      tasks: { type: 'string' },
      config: { type: 'string' },
      jsonl: { type: 'string' },
    });
    if ((values.requests === undefined) === (values['request-topic'] === undefined)) throw new InputError('give exactly one of --requests or --request-topic', 'BAD_FLAGS');
    if ((values.corpus === undefined) === (values.notes === undefined)) throw new InputError('give exactly one of --corpus or --notes', 'BAD_FLAGS');
    if (values.tasks === undefined && values.jsonl === undefined) throw new InputError('give --tasks FILE and/or --jsonl FILE: nothing would be written', 'BAD_FLAGS');
    const outputs = [['tasks', values.tasks], ['jsonl', values.jsonl], ['config', values.config]] as const;
    refuseClobbering(outputs, [['requests', values.requests], ['corpus', values.corpus], ['notes', values.notes]]);
    // Every output is checked before any is written: a bad last path must not leave the first ones behind.
    for (const [flag, path] of outputs) if (path !== undefined) checkWritable(path, flag);

    const requestTopics = values['request-topic'] ?? [];
    if (new Set(requestTopics).size !== requestTopics.length) throw new InputError('--request-topic names a topic twice', 'BAD_FLAGS');
    let batch: RequestBatch = { requests: [], refused: [] };
    if (values.requests !== undefined) batch = await readLabelRequestFile(values.requests);
    else {
      const { connection, schemaRegistry } = kafkaRequest(values, 'cuilink-annotate-export');
      const kafka = createKafkaClient(connection);
      await requireTopics(kafka, requestTopics);
      const codec = createRecordCodec({ schemaRegistry });
      for (const topic of requestTopics) {
        const read = await readLabelRequestTopic(kafka, codec, topic);
        batch = { requests: [...batch.requests, ...read.requests], refused: [...batch.refused, ...read.refused] };
      }
    }
    const wanted = new Set(batch.requests.map((r) => r.request.noteId));
    const notes = values.corpus !== undefined ? await readPubTatorNotes(values.corpus, wanted) : await readNoteJsonl(values.notes!, wanted);
    const { joined, refused } = joinRequestsToNotes(batch.requests, notes.notes);
    // In input order: a request file's refusals and the join's, by line number (a topic's stay in read order).
    const byPosition = (where: string) => Number(/^line (\d+)/.exec(where)?.[1] ?? 0);
    const inOrder = [...batch.refused, ...refused].sort((a, b) => byPosition(a.where) - byPosition(b.where));
    for (const r of [...notes.refused, ...inOrder]) console.error(`annotate export: ${r.where}: ${r.reason}`);

    const written: string[] = [];
    if (values.tasks !== undefined) {
      await writeJsonItems(values.tasks, joined.map(buildLabelStudioTask), 'array');
      written.push(`Label Studio tasks → ${values.tasks}`);
    }
    if (values.jsonl !== undefined) {
      await writeJsonItems(values.jsonl, joined.map(buildPlainTaskLine), 'lines');
      written.push(`plain JSONL → ${values.jsonl}`);
    }
    if (values.config !== undefined) {
      try {
        writeFileSync(values.config, LABELING_CONFIG);
      } catch (error) {
        throw new InputError(`cannot write ${values.config}: ${(error as Error).message}`, 'BAD_OUTPUT', error);
      }
      written.push(`labeling config → ${values.config}`);
    }
    const learn = joined.filter((j) => j.request.stream === 'learn').length;
    const source = values.requests ?? `topic ${requestTopics.join(', ')}`;
    const refusedCount = batch.refused.length + refused.length;
    console.log(
      `annotate export: ${batch.requests.length + batch.refused.length} requests read from ${source}, ${joined.length} tasks (learn ${learn}, measure ${joined.length - learn})` +
        `${refusedCount > 0 ? `, ${refusedCount} refused` : ''}${notes.refused.length > 0 ? `, ${notes.refused.length} notes lines skipped` : ''}; ${written.join(', ')}`,
    );
    return joined.length > 0 ? 0 : 3;
  },
};
