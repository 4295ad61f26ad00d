// `cuilink topics read` against a real broker: records of every type the stage's topics carry,
// written with cuilink's codecs (single-object Avro, an older schema, the deprecated fingerprint
// header, the Confluent wire format through a registry), in committed and aborted transactions,
// come back as one JSON line each with their position, key and time; undecodable ones as error
// lines; note text only with --show-text; --partition, --offset, --max, --follow, read_committed.
import type { RecordLine } from '../../src/cli/topic-record-lines.ts';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { KafkaClient, OutboundRecord } from '../../src/stream/kafka/client-types.ts';
import { startLocalBroker, type LocalBroker } from '../../src/stream/local-broker.ts';
import { createKafkaClient } from '../../src/stream/kafka-client.ts';
import { ensureTopics } from '../../src/stream/topics.ts';
import { ENV_VARS } from '../../src/stream/stage-config.ts';
import { ConfluentAvroCodec, createRecordCodec, knownSchemas, noteInputToNoteEvent, SCHEMA_FINGERPRINT_HEADER, toSingleObject } from '../../src/stream/avro/index.ts';
import type { DeadLetterRecord, GoldMentionRecord, LabelRequestRecord, LinkedNoteRecord, ReviewMentionRecord } from '../../src/stream/avro/avro-records.ts';
import { ledgerRecord } from '../../src/stream/replay-ledger.ts';
import { InputError } from '../../src/kb/errors.ts';
import { runTopicsRead } from '../../src/cli/commands/topics-read.ts';
import { publish, syntheticNotes, waitFor } from '../support/stream-fixtures.ts';
import { capture } from '../support/capture-console.ts';
import { startSchemaRegistryStandIn, type SchemaRegistryStandIn } from '../support/schema-registry-stand-in.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const MARKER = 'ZQXPHIMARKER7731';
const topics = { input: 'tr.notes', output: 'tr.linked', deadLetter: 'tr.dead', review: 'tr.review', labelRequests: 'tr.learn', measureRequests: 'tr.measure' };
const GOLD = 'tr.gold';
const OTHER_LEDGER = 'tr.other-ledger';
const codec = createRecordCodec();
let broker: LocalBroker;
let registry: SchemaRegistryStandIn;
let root: string;
let kafka: KafkaClient;
let configFile: string;
let confluentConfigFile: string;

/** A JSON line as `topics read` prints it, its value parsed. */
type Line = Omit<RecordLine, 'value'> & { value?: Record<string, unknown> };

function linkedNote(noteId: string, conceptId: string): LinkedNoteRecord {
  const candidate = { conceptId, name: 'Seizure', semanticTypes: [], score: 0.9, retrievalScore: 0.8, exact: false, via: 'dense' };
  const mention = { mentionId: 'm1', start: 0, end: 8, label: 'Phenotype', conceptId, conceptName: 'Seizure', semanticTypes: [], score: 0.9, confidence: 0.8, via: 'dense', inKb: 0.9, nil: false, reranked: true, candidates: [candidate], expandedFrom: null, memoryDecided: false, memorySupport: 0 };
  return { noteId, mentions: [mention], linkerVersion: 'l1', modelVersion: 'm1', indexVersion: 'i1', memoryVersion: null, linkedAt: 1_760_000_000_000 };
}

const review: ReviewMentionRecord = { noteId: 'n-r', mentionId: 'm1', start: 0, end: 4, label: 'Phenotype', conceptId: null, confidence: 0.2, via: 'dense', inKb: 0.3, nil: true, candidates: [{ conceptId: 'HP:1', name: 'Ataxia', score: 0.4, via: 'dense' }], linkerVersion: 'l1', modelVersion: 'm1', indexVersion: 'i1', linkedAt: 1_760_000_000_000 };
const request = (stream: 'learn' | 'measure'): LabelRequestRecord => ({ noteId: `n-${stream}`, mentionId: 'm1', start: 0, end: 4, label: 'Phenotype', stream, policy: stream === 'learn' ? 'confidence' : 'random-notes', priority: 0.5, recurrence: 1, conceptId: null, confidence: null, via: null, nil: true, candidates: [], memoryVersion: null, linkerVersion: 'l1', modelVersion: 'm1', indexVersion: 'i1', requestedAt: 1_760_000_000_000 });
const gold = (i: number): GoldMentionRecord => ({ noteId: `n-g${i}`, mentionId: 'm1', ids: ['HP:0001250'], label: 'Phenotype', start: 0, end: 8, annotator: 'a', annotatedAt: 1_760_000_000_000 + i });

async function encoded(kind: Parameters<typeof codec.encode>[0], record: never, key: string | Buffer, partition?: number): Promise<OutboundRecord> {
  const { value, headers } = await codec.encode(kind, record);
  return { key, value, headers, ...(partition === undefined ? {} : { partition }) };
}

/** Sends each group of messages in its own transaction, committed or aborted. */
async function transactions(topic: string, groups: { messages: OutboundRecord[]; abort?: boolean }[]): Promise<void> {
  const producer = kafka.producer({ transactionalId: `tr-test-${topic}` });
  await producer.connect();
  try {
    for (const group of groups) {
      const transaction = await producer.transaction();
      await transaction.send({ topic, messages: group.messages });
      await (group.abort ? transaction.abort() : transaction.commit());
    }
  } finally {
    await producer.close();
  }
}

const originalNote = () => noteInputToNoteEvent({ ...syntheticNotes(1, 'tr-dead')[0]!, text: `${MARKER} patient reports seizures.`, mentions: [] });

async function deadLetter(failedAt: number): Promise<DeadLetterRecord> {
  const original = (await codec.encode('NoteEvent', originalNote())).value;
  return { originalKey: Buffer.from('tr-dead-key'), original, originalHeaders: [], errorCode: 'NOTE_TOO_LARGE', reason: 'the note has 40 characters, over limits.maxNoteChars 10', sourceTopic: topics.input, partition: 0, offset: 7, stage: 'decode', failedAt, originalTruncated: false, originalSha256: createHash('sha256').update(original).digest('hex'), originalSize: original.length };
}

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-topics-read-'));
  [broker, registry] = await Promise.all([startLocalBroker(), startSchemaRegistryStandIn()]);
  kafka = createKafkaClient({ brokers: broker.brokers, clientId: 'topics-read-test', logLevel: 'nothing' });
  configFile = join(root, 'stage.json');
  writeFileSync(configFile, JSON.stringify({ brokers: broker.brokers, groupId: 'tr-stage-group', topics, telemetry: { kafkaLogLevel: 'error' } }));
  confluentConfigFile = join(root, 'confluent.json');
  writeFileSync(confluentConfigFile, JSON.stringify({ brokers: broker.brokers, topics: { input: 'trc.notes', output: 'trc.linked', deadLetter: 'trc.dead' }, avro: { wireFormat: 'confluent' }, schemaRegistry: { url: registry.url }, telemetry: { kafkaLogLevel: 'error' } }));
  await ensureTopics(kafka, [topics.output], { partitions: 2 });
  await ensureTopics(kafka, [topics.input, topics.deadLetter, `${topics.deadLetter}.replayed`, topics.review, topics.labelRequests, topics.measureRequests, GOLD, 'trc.linked'], { partitions: 1 });

  // The output topic, p0: A 0, garbage 1, commit 2, C 3 (aborted), abort 4, D 5, commit 6; p1: B 0 (deprecated header), V1 1 (older schema), commit 2.
  const current = knownSchemas().current('LinkedNote');
  const v1 = knownSchemas().all('LinkedNote').find((s) => s.file.endsWith('linked-note.v1.avsc'))!;
  const { memoryVersion: _memoryVersion, ...v1Note } = linkedNote('n-v1', 'HP:0000004');
  const v1Mentions = v1Note.mentions.map(({ confidence: _c, via: _v, inKb: _k, memoryDecided: _d, memorySupport: _s, ...m }) => ({ ...m, candidates: m.candidates.map(({ via: _cv, ...c }) => c) }));
  await transactions(topics.output, [
    {
      messages: [
        await encoded('LinkedNote', linkedNote('n-a', 'HP:0000001') as never, 'n-a', 0),
        { key: Buffer.from([0xff, 0xfe]), value: Buffer.from('not an avro record'), partition: 0 },
        { key: 'n-b', value: current.type.toBuffer(linkedNote('n-b', 'HP:0000002')), headers: { [SCHEMA_FINGERPRINT_HEADER]: current.fingerprint }, partition: 1 },
        { key: 'n-v1', value: toSingleObject(v1.singleObjectFingerprint, v1.type.toBuffer({ ...v1Note, mentions: v1Mentions })), partition: 1 },
      ],
    },
    { messages: [await encoded('LinkedNote', linkedNote('n-c', 'HP:0000003') as never, 'n-c', 0)], abort: true },
    { messages: [await encoded('LinkedNote', linkedNote('n-d', 'HP:0000005') as never, 'n-d', 0)] },
  ]);
  const [note] = syntheticNotes(1, 'tr-in', MARKER);
  await publish(kafka, topics.input, [await encoded('NoteEvent', noteInputToNoteEvent(note!) as never, note!.noteId)]);
  const letters = [await deadLetter(1_760_000_000_000), await deadLetter(1_760_000_000_001)];
  await publish(kafka, topics.deadLetter, [await encoded('DeadLetter', letters[0] as never, 'tr-dead-key'), await encoded('DeadLetter', letters[1] as never, 'tr-dead-key')]);
  await publish(kafka, `${topics.deadLetter}.replayed`, [ledgerRecord({ topic: topics.deadLetter, partition: 0, offset: '1' }, letters[1]!, topics.input, 1_760_000_000_100)]);
  // A replay ledger under another name ('dlq replay --ledger tr.other-ledger'): it sent the first one.
  await ensureTopics(kafka, [OTHER_LEDGER], { partitions: 1 });
  await publish(kafka, OTHER_LEDGER, [ledgerRecord({ topic: topics.deadLetter, partition: 0, offset: '0' }, letters[0]!, topics.input, 1_760_000_000_200)]);
  await publish(kafka, topics.review, [await encoded('ReviewMention', review as never, 'n-r')]);
  await publish(kafka, topics.labelRequests, [await encoded('LabelRequest', request('learn') as never, 'n-learn'), await encoded('ReviewMention', review as never, 'n-r')]);
  await publish(kafka, topics.measureRequests, [await encoded('LabelRequest', request('measure') as never, 'n-measure')]);
  await publish(kafka, GOLD, await Promise.all([0, 1, 2].map((i) => encoded('GoldMention', gold(i) as never, `n-g${i}`))));
  const confluent = new ConfluentAvroCodec({ url: registry.url });
  try {
    const { value, headers } = await confluent.encode('LinkedNote', linkedNote('n-conf', 'HP:0000006'), 'trc.linked');
    await publish(kafka, 'trc.linked', [{ key: 'n-conf', value, headers }]);
  } finally {
    await confluent.close?.();
  }
});

after(async () => {
  await broker?.stop();
  await registry?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** `topics read --config <stage.json> ...args` in process: its exit code, stdout parsed line by line, stderr lines. */
async function read(args: string[], options: { config?: string; stop?: AbortSignal; onLine?: (line: Line) => void } = {}): Promise<{ code: number; lines: Line[]; raw: string; err: string[] }> {
  const out = new PassThrough();
  let raw = '';
  const lines: Line[] = [];
  out.on('data', (chunk: Buffer) => {
    raw += chunk.toString();
    const complete = raw.split('\n').slice(0, -1);
    for (const text of complete.slice(lines.length)) {
      const line = JSON.parse(text) as Line;
      lines.push(line);
      options.onLine?.(line);
    }
  });
  const err: string[] = [];
  const code = await runTopicsRead(['--config', options.config ?? configFile, ...args], { out, err: (line) => err.push(line), stop: options.stop });
  return { code, lines, raw, err };
}

const positions = (lines: Line[]) => lines.map((l) => `${l.partition}:${l.offset}`).sort();

test('the output topic by default: LinkedNotes of every format as JSON lines, the garbage as an error line (exit 1), the aborted transaction unseen', async () => {
  const { code, lines, err } = await read([]);
  assert.equal(code, 1, err.join('\n'));
  assert.deepEqual(positions(lines), ['0:0', '0:1', '0:5', '1:0', '1:1']);
  const at = (p: string) => lines.find((l) => `${l.partition}:${l.offset}` === p)!;
  assert.deepEqual(at('0:0').value, JSON.parse(JSON.stringify(linkedNote('n-a', 'HP:0000001'))));
  assert.equal(at('0:0').key, 'n-a');
  assert.equal(at('0:0').type, 'LinkedNote');
  assert.equal(at('0:0').topic, topics.output);
  assert.match(at('0:0').timestamp!, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  assert.ok(Math.abs(Date.parse(at('0:0').timestamp!) - Date.now()) < 3_600_000, 'the record time, not the epoch');
  assert.deepEqual(at('1:0').value, JSON.parse(JSON.stringify(linkedNote('n-b', 'HP:0000002'))), 'the deprecated fingerprint header');
  assert.equal((at('1:1').value as { noteId: string }).noteId, 'n-v1');
  const v1Mention = (at('1:1').value as { mentions: Record<string, unknown>[] }).mentions[0]!;
  assert.equal(v1Mention.conceptId, 'HP:0000004');
  assert.equal(v1Mention.confidence, null, 'an older schema read with the current one: its defaults');
  assert.equal(at('0:5').key, 'n-d');
  const garbage = at('0:1');
  assert.equal(garbage.value, undefined);
  assert.equal(garbage.key, null);
  assert.equal(garbage.keyHex, 'fffe');
  assert.equal(garbage.error?.code, 'UNKNOWN_SCHEMA');
  assert.match(garbage.error!.message, /not Avro single-object encoded/);
  assert.match(err.at(-1)!, /^topics read: tr\.linked \(LinkedNote\): 5 records, 1 could not be decoded$/);

  const uncommitted = await read(['--read-uncommitted']);
  assert.deepEqual(positions(uncommitted.lines), ['0:0', '0:1', '0:3', '0:5', '1:0', '1:1'], 'the aborted record too');
});

test('--partition, --offset and --max choose what is read; a partition or offset not on the topic is refused', async () => {
  const fromThree = await read(['--partition', '0', '--offset', '3']);
  assert.deepEqual(positions(fromThree.lines), ['0:5']);
  assert.equal(fromThree.code, 0);
  const uncommitted = await read(['--partition', '0', '--offset', '3', '--read-uncommitted']);
  assert.deepEqual(positions(uncommitted.lines), ['0:3', '0:5']);
  const one = await read(['--partition', '1', '--max', '1']);
  assert.deepEqual(positions(one.lines), ['1:0']);
  assert.match(one.err.at(-1)!, /: 1 record \(--max 1\)$/);
  const atEnd = await read(['--partition', '1', '--offset', 'end']);
  assert.deepEqual(atEnd.lines, []);
  await assert.rejects(read(['--offset', '1']), /^InputError: --offset 1 names no partition and tr\.linked has 2: add --partition P$/);
  await assert.rejects(read(['--partition', '2']), /--partition 2: tr\.linked has no such partition \(it has 2: 0-1\)/);
  await assert.rejects(read(['--partition', '0', '--offset', '99']), /--offset 99: partition 0 of tr\.linked ends at 7/);
});

test('each topic of the config is read as its type; the review, request and gold records carry no text; --type forces one', async () => {
  const reviewed = await read(['--topic', topics.review]);
  assert.equal(reviewed.code, 0);
  assert.deepEqual(reviewed.lines.map((l) => [l.type, l.value]), [['ReviewMention', review]]);
  const learn = await read(['--topic', topics.labelRequests]);
  assert.equal(learn.code, 1);
  assert.deepEqual(learn.lines[0]!.value, request('learn'));
  assert.equal(learn.lines[1]!.error?.code, 'UNKNOWN_SCHEMA');
  assert.match(learn.lines[1]!.error!.message, /the record is org\.cuilink\.ReviewMention, expected LabelRequest/);
  const measure = await read(['--topic', topics.measureRequests]);
  assert.deepEqual(measure.lines.map((l) => [l.type, l.value]), [['LabelRequest', request('measure')]]);
  const golds = await read(['--topic', GOLD, '--gold-topic', GOLD]);
  assert.deepEqual(golds.lines.map((l) => [l.type, l.key, l.value]), [0, 1, 2].map((i) => ['GoldMention', `n-g${i}`, gold(i)]));
  const forced = await read(['--topic', topics.review, '--type', 'LabelRequest']);
  assert.equal(forced.code, 1);
  assert.equal(forced.lines[0]!.type, 'LabelRequest');
  assert.match(forced.lines[0]!.error!.message, /expected LabelRequest/);
  await assert.rejects(read(['--topic', 'tr.other']), /--topic tr\.other is none of the topics of this config .*give --type NoteEvent\|LinkedNote/);
});

test('note text stays hidden without --show-text: NoteEvents redacted, dead letters as dlq inspect shows them with the replay ledger read', async () => {
  const notes = await read(['--topic', topics.input]);
  assert.equal(notes.code, 0);
  assert.doesNotMatch(notes.raw, new RegExp(MARKER));
  const note = notes.lines[0]!;
  assert.equal(note.type, 'NoteEvent');
  assert.equal(note.textHidden, true);
  assert.equal(note.value!.text, '[redacted]');
  assert.ok((note.value!.mentions as { text: string; start: number }[]).every((m) => m.text === '[redacted]' && Number.isInteger(m.start)));
  const shown = await read(['--topic', topics.input, '--show-text']);
  assert.match(String(shown.lines[0]!.value!.text), new RegExp(MARKER));
  assert.equal(shown.lines[0]!.textHidden, undefined);
  assert.ok(shown.err.some((l) => /note text \(PHI\) follows/.test(l)));

  const letters = await read(['--topic', topics.deadLetter]);
  assert.equal(letters.code, 0);
  assert.doesNotMatch(letters.raw, new RegExp(MARKER));
  assert.deepEqual(letters.lines.map((l) => [l.type, l.value!.errorCode, l.value!.replay, l.value!.firstBytes, l.value!.key]), [
    ['DeadLetter', 'NOTE_TOO_LARGE', 'yes', null, 'tr-dead-key'],
    ['DeadLetter', 'NOTE_TOO_LARGE', 'already-replayed', null, 'tr-dead-key'],
  ]);
  const lettersShown = await read(['--topic', topics.deadLetter, '--show-text']);
  assert.match(String(lettersShown.lines[0]!.value!.originalText), new RegExp(MARKER));
  assert.match(String(lettersShown.lines[0]!.value!.firstBytes), /^c301/);
});

test('--ledger T reads dead letters against that replay ledger, as dlq inspect --ledger does; refused for a topic of another type', async () => {
  const letters = await read(['--topic', topics.deadLetter, '--ledger', OTHER_LEDGER]);
  assert.equal(letters.code, 0);
  assert.deepEqual(letters.lines.map((l) => l.value!.replay), ['already-replayed', 'yes']);
  await assert.rejects(read(['--ledger', OTHER_LEDGER]), (e: Error) => e instanceof InputError && /^--ledger: only for a dead-letter topic; .* is read as LinkedNote/.test(e.message));
  await assert.rejects(read(['--topic', topics.deadLetter, '--ledger', topics.deadLetter]), /--ledger .* is the dead-letter topic itself/);
});

test('the Confluent wire format through the config\'s schema registry', async () => {
  const { code, lines } = await read([], { config: confluentConfigFile });
  assert.equal(code, 0);
  assert.deepEqual(lines.map((l) => [l.key, l.value]), [['n-conf', JSON.parse(JSON.stringify(linkedNote('n-conf', 'HP:0000006')))]]);
});

test('a missing topic is exit 3 naming it', async () => {
  const missing = await capture(() => read(['--topic', 'tr.nothing', '--type', 'GoldMention']).then((r) => r.code));
  assert.equal(missing.code, 3);
  assert.match(missing.err.join('\n'), /^cuilink topics read: .*topic\(s\) tr\.nothing do not exist/);
});

test('--follow prints records written after the start until --max; --offset end only those', async () => {
  const seen: Line[] = [];
  const following = read(['--topic', GOLD, '--gold-topic', GOLD, '--follow', '--max', '5'], { onLine: (line) => seen.push(line) });
  await waitFor(() => seen.length >= 3, 60_000, 'the gold topic read to its end');
  await publish(kafka, GOLD, [await encoded('GoldMention', gold(3) as never, 'n-g3'), await encoded('GoldMention', gold(4) as never, 'n-g4')]);
  const { code, lines } = await following;
  assert.equal(code, 0);
  assert.deepEqual(lines.map((l) => l.key), ['n-g0', 'n-g1', 'n-g2', 'n-g3', 'n-g4']);

  // From the end: the first record printed is one written after the start, never an old one.
  const fresh: Line[] = [];
  const fromEnd = read(['--topic', GOLD, '--gold-topic', GOLD, '--follow', '--offset', 'end', '--max', '1'], { onLine: (line) => fresh.push(line) });
  let i = 5;
  await waitFor(async () => {
    if (fresh.length > 0) return true;
    await publish(kafka, GOLD, [await encoded('GoldMention', gold(i) as never, `n-g${i++}`)]);
    return false;
  }, 60_000, 'a record written after the start');
  const ended = await fromEnd;
  assert.equal(ended.lines.length, 1);
  assert.ok(Number(ended.lines[0]!.offset) >= 5, `offset ${ended.lines[0]!.offset}`);
});

test('the CLI: JSON lines only on stdout, --follow ends on SIGINT with exit 0 and the summary on stderr', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name] of ENV_VARS) delete env[name];
  const child = spawn(process.execPath, ['bin/cuilink.js', 'topics', 'read', '--config', configFile, '--topic', topics.review, '--follow'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const closed = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
  try {
    await waitFor(() => stdout.includes('\n') || child.exitCode !== null, 60_000, 'the review record printed');
    child.kill('SIGINT');
    assert.equal(await closed, 0, stderr);
  } finally {
    clearTimeout(guard);
  }
  const lines = stdout.trim().split('\n');
  assert.equal(lines.length, 1, stdout);
  assert.deepEqual((JSON.parse(lines[0]!) as Line).value, review);
  assert.match(stderr, /topics read: tr\.review \(ReviewMention\): 1 record \(stopped\)/);
});
