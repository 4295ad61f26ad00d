import type { Command } from '../command.ts';
import { isBrokerFailure } from '../broker-failure.ts';
import { parseFlags } from '../args.ts';
import { CuilinkError, InputError } from '../../kb/errors.ts';
import type { KafkaProducerClient, KafkaTransaction, OutboundRecord } from '../../stream/kafka/client-types.ts';
import { requireTopics } from '../../stream/topics.ts';
import { createPlannedTopics, replayLedgerTopic, settingsText, topicLabel } from '../../stream/topic-plan.ts';
import { countsText, positionOf, REPLAYED_FROM_HEADER, replayMessage, replayVerdict, selectDeadLetters, viewOf, type DeadLetterEntry } from '../../stream/dead-letter-replay.ts';
import { ledgerRecord, replayTransactionalId, type ReplayLedger } from '../../stream/replay-ledger.ts';
import { closeContext, COMMON_FLAGS, COMMON_HELP, openContext, parseFilterFlags, parseOffsets, partitionCount, readDeadLetters, readLedger, TOPIC_NAME, type DlqContext } from './dlq.ts';

// `cuilink dlq replay` (docs/dead-letters.md): sends the selected replayable originals back, each
// in one Kafka transaction with its entry in the replay ledger, and skips what the ledger says was
// sent.

const replayUsage = `Usage: cuilink dlq replay [options] [--dry-run | --execute] [--again]

Sends the selected dead letters' original key, value and headers back to the input topic (after the
cause was fixed: a limit raised, a schema made known...), each with the header
'${REPLAYED_FROM_HEADER}: <dead-letter topic>/<partition>/<offset>', in partition and offset order.
Each record goes in one Kafka transaction with its entry in the replay ledger (a compacted topic,
--ledger, made by the first --execute): a replay stopped part way leaves both or neither, and a
later replay skips the dead letters the ledger holds (already-replayed) unless --again is given.
Two replays of one ledger at once fence each other (one transactional id per ledger): the later
goes on, the earlier stops. A dry run (the default) reads, prints exactly what --execute would
send and writes nothing. Never sent (skipped, counted by reason): a dead letter whose original was
cut, whose code never succeeds on replay (EMPTY_RECORD, UNDECODABLE, BAD_TEXT_ENCODING, BAD_NOTE,
EMPTY_NOTE, BAD_MENTION), whose code this version does not know, whose original does not match its
sha256, or that is no readable DeadLetter. --limit counts the dead letters not already replayed.
Exit code 3 when nothing is (or would be) sent. docs/dead-letters.md.

Options:
${COMMON_HELP}
  --to T                 the topic to send to (default: the config's topics.input, cuilink.notes)
  --dry-run              print what would be sent, send nothing (the default)
  --execute              send
  --again                send dead letters the ledger says were sent before too
  -h, --help             this text`;

/** The request size replay sends at most per transaction (one record larger goes alone). */
const SEND_CHUNK_BYTES = 512 * 1024;
const SEND_CHUNK_RECORDS = 200;

interface Send {
  entry: DeadLetterEntry;
  message: OutboundRecord;
}

function messageLine(verb: string, send: Send, to: string, ledger: ReplayLedger): string {
  const { entry, message } = send;
  const value = message.value as Buffer | null;
  const headers = Object.keys(message.headers ?? {}).map((k) => (k === REPLAYED_FROM_HEADER ? `${k}=${String(message.headers![k])}` : k));
  const view = viewOf(entry);
  // Only with --again does a dead letter the ledger holds get here.
  const before = ledger.replayOf(entry, entry.letter!);
  const again = before === undefined ? '' : ` again (replayed before${'replayedAt' in before ? ` at ${new Date(before.replayedAt).toISOString()}` : ''})`;
  return `${verb} ${positionOf(entry)} ${entry.letter!.errorCode} → ${to} key=${view.key ?? '(null)'} size=${value?.length ?? '(null)'} sha256=${view.sha256 ?? '-'} headers=[${headers.join(', ')}]${again}`;
}

/**
 * The error a send that failed part way ends the replay with: the message says how far it got. A
 * broker's failure keeps the broker's code, which makes it exit 3 like every other broker
 * failure, not 2, the exit code of a bad flag.
 */
export function replayStopped(error: unknown, message: string): CuilinkError {
  if (isBrokerFailure(error)) return new CuilinkError(error.code, message, { retriable: error.retriable, cause: error });
  return new CuilinkError('REPLAY_FAILED', message, { cause: error });
}

/** Another replay registered the ledger's transactional id after this one: this one's open transaction was aborted. */
function isFencedByAnotherReplay(error: unknown): boolean {
  return error instanceof CuilinkError && (error.code === 'KAFKA_PRODUCER_FENCED' || error.code === 'KAFKA_INVALID_PRODUCER_EPOCH');
}

/** Makes the ledger topic when it does not exist, as `cuilink topics create` makes topics, replicated as the dead-letter topic. */
async function ensureLedger(context: DlqContext): Promise<void> {
  const admin = context.kafka.admin();
  let replicationFactor: number;
  try {
    if ((await admin.listTopics()).includes(context.ledger)) return;
    replicationFactor = (await admin.describeTopics([context.topic]))[0]?.replicationFactor ?? 1;
  } finally {
    await admin.close();
  }
  const planned = replayLedgerTopic(context.ledger, replicationFactor);
  const [report] = await createPlannedTopics(context.kafka, [planned]);
  if (report?.created) console.log(`created ${topicLabel(planned)}: ${settingsText(planned)}`);
}

/**
 * The dead letters that pass the filters, in partition and offset order, up to `limit` of those
 * the ledger does not hold: a replay run again with --limit N goes on with the next N.
 */
export function selectForReplay(entries: DeadLetterEntry[], filter: Parameters<typeof selectDeadLetters>[1], limit: number, ledger: ReplayLedger | undefined): DeadLetterEntry[] {
  const selected: DeadLetterEntry[] = [];
  let counted = 0;
  for (const entry of selectDeadLetters(entries, filter)) {
    const verdict = replayVerdict(entry, ledger);
    if (!verdict.replayable && verdict.skip === 'already-replayed') selected.push(entry);
    else if (counted < limit) {
      selected.push(entry);
      counted++;
    } else break;
  }
  return selected;
}

export const dlqReplay: Command = {
  name: 'dlq replay',
  summary: 'Send selected dead letters back to the input topic after a fix (dry run by default; never the hopeless ones, nor those sent before)',
  usage: replayUsage,
  async run(argv) {
    const { values } = parseFlags(argv, { ...COMMON_FLAGS, to: { type: 'string' }, 'dry-run': { type: 'boolean' }, execute: { type: 'boolean', default: false }, again: { type: 'boolean', default: false } });
    if (values.execute && values['dry-run']) throw new InputError('give --dry-run or --execute, not both', 'BAD_FLAGS');
    const execute = values.execute;
    const { filter, limit } = parseFilterFlags(values);
    const context = openContext(values);
    let producer: KafkaProducerClient | undefined;
    try {
      const to = values.to ?? context.config.topics.input;
      if (!TOPIC_NAME.test(to)) throw new InputError(`--to '${to}' is not a topic name (1-249 of [A-Za-z0-9._-])`, 'BAD_FLAGS');
      if (to === context.topic) throw new InputError(`--to ${to} is the dead-letter topic itself`, 'BAD_FLAGS');
      if (to === context.ledger) throw new InputError(`--to ${to} is the replay ledger (--ledger)`, 'BAD_FLAGS');
      await requireTopics(context.kafka, [context.topic, to], values.to === undefined ? context.flagged : new Map([...context.flagged, [to, '--to']]));
      const positions = parseOffsets(values.offsets, await partitionCount(context.kafka, context.topic));
      if (execute) {
        // The id is registered before the ledger is read: a replay still sending is fenced (its
        // open transaction aborted), and one that committed is settled, so the ledger read next
        // holds everything sent before; a replay started later fences this one in turn.
        await ensureLedger(context);
        producer = context.kafka.producer({ transactionalId: replayTransactionalId(context.ledger), transactionTimeoutMs: context.config.transactionTimeoutMs });
        await producer.connect();
      }
      const ledger = await readLedger(context);
      const entries = await readDeadLetters(context);
      if (positions !== undefined) {
        const present = new Set(entries.map(positionOf));
        const missing = [...positions].filter((p) => !present.has(p));
        if (missing.length > 0) throw new InputError(`--offsets ${missing.join(', ')}: no record at ${missing.length === 1 ? 'that position' : 'those positions'} of ${context.topic} (read to its end)`, 'BAD_FLAGS');
      }
      const skipSent = values.again ? undefined : ledger;
      const selected = selectForReplay(entries, { ...filter, positions }, limit, skipSent);
      const sends: Send[] = [];
      const skipped = new Map<string, number>();
      for (const entry of selected) {
        const verdict = replayVerdict(entry, skipSent);
        if (!verdict.replayable) {
          skipped.set(verdict.skip, (skipped.get(verdict.skip) ?? 0) + 1);
          console.log(`skip ${positionOf(entry)} ${entry.letter?.errorCode ?? '(not a DeadLetter)'}: ${verdict.detail}`);
          continue;
        }
        const send = { entry, message: replayMessage(entry) };
        sends.push(send);
        if (!execute) console.log(messageLine('would send', send, to, ledger));
      }
      const skippedCount = selected.length - sends.length;
      const head = `dlq replay${execute ? '' : ' (dry run)'}: ${context.topic}: ${entries.length} records read, ${selected.length} selected`;
      const skipText = skippedCount > 0 ? `, ${skippedCount} skipped (${countsText(skipped)})` : '';
      if (producer === undefined) {
        console.log(`${head}: ${sends.length} would be sent to ${to}${skipText}${sends.length > 0 ? '; nothing sent: run again with --execute to send them' : ''}`);
        return sends.length > 0 ? 0 : 3;
      }
      const sent = await sendInTransactions(producer, sends, to, context.ledger, ledger);
      console.log(`${head}: ${sent} sent to ${to} (transactional, recorded in ${context.ledger})${skipText}`);
      return sent > 0 ? 0 : 3;
    } finally {
      await producer?.close();
      await closeContext(context);
    }
  },
};

/** Sends in chunks, each chunk's records and ledger entries in one transaction; returns how many were sent. */
export async function sendInTransactions(producer: KafkaProducerClient, sends: Send[], to: string, ledgerTopic: string, ledger: ReplayLedger): Promise<number> {
  let sent = 0;
  let chunk: Send[] = [];
  let bytes = 0;
  const flush = async () => {
    if (chunk.length === 0) return;
    const replayedAt = Date.now();
    let transaction: KafkaTransaction | undefined;
    try {
      transaction = await producer.transaction();
      await transaction.send({ topic: to, messages: chunk.map((c) => c.message) });
      await transaction.send({ topic: ledgerTopic, messages: chunk.map((c) => ledgerRecord(c.entry, c.entry.letter!, to, replayedAt)) });
      await transaction.commit();
    } catch (error) {
      await transaction?.abort().catch(() => {});
      const done = `${sent} of ${sends.length} sent, each with its entry in the ledger ${ledgerTopic}`;
      const message = isFencedByAnotherReplay(error)
        ? `replay stopped: another 'dlq replay' of the ledger ${ledgerTopic} started and fenced this one (transactional id ${replayTransactionalId(ledgerTopic)}): ${done}; the next ${chunk.length} were not, and the other replay skips what this one sent: ${(error as Error).message}`
        : `replay stopped: ${done}; the next ${chunk.length} were not, unless only the commit's answer was lost: run the same replay again, it skips what the ledger holds: ${(error as Error).message}`;
      throw replayStopped(error, message);
    }
    sent += chunk.length;
    for (const c of chunk) console.log(messageLine('sent', c, to, ledger));
    chunk = [];
    bytes = 0;
  };
  for (const send of sends) {
    const size = ((send.message.value as Buffer | null)?.length ?? 0) + ((send.message.key as Buffer | null)?.length ?? 0);
    if (chunk.length > 0 && (bytes + size > SEND_CHUNK_BYTES || chunk.length >= SEND_CHUNK_RECORDS)) await flush();
    chunk.push(send);
    bytes += size;
  }
  await flush();
  return sent;
}
