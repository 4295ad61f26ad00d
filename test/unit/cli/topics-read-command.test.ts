// `cuilink topics read`: its flags (each bad one named, exit 2 before any broker is contacted),
// which type each of the config's topics is read as, and where each partition starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { loadStageConfig } from '../../../src/stream/stage-config.ts';
import { planTopics } from '../../../src/stream/topic-plan.ts';
import { LineWriter, parseReadFlags, readPlan } from '../../../src/cli/commands/topics-read.ts';
import { recordLine, recordTypeOf } from '../../../src/cli/topic-record-lines.ts';
import { createRecordCodec } from '../../../src/stream/avro/index.ts';
import { assertRefusedInOneLine, cli } from '../../support/cli-run.ts';


test('the flags: defaults, and each bad value refused naming its flag', () => {
  assert.deepEqual(parseReadFlags({}), { topic: undefined, type: undefined, partition: undefined, start: { at: 'beginning' }, max: Infinity, follow: false, showText: false, readCommitted: true });
  assert.deepEqual(parseReadFlags({ topic: 'a.b', type: 'GoldMention', partition: '2', offset: '12', max: '5', follow: true, 'show-text': true, 'read-uncommitted': true }), {
    topic: 'a.b', type: 'GoldMention', partition: 2, start: { at: 'offset', offset: 12n }, max: 5, follow: true, showText: true, readCommitted: false,
  });
  assert.deepEqual(parseReadFlags({ offset: 'end' }).start, { at: 'end' });
  assert.deepEqual(parseReadFlags({ offset: 'beginning' }).start, { at: 'beginning' });
  assert.deepEqual(parseReadFlags({ 'from-beginning': true }).start, { at: 'beginning' });
  assert.equal(parseReadFlags({ offset: '9223372036854775807' }).start.at, 'offset', 'an int64 offset');
  const refused: [Record<string, string | boolean>, RegExp][] = [
    [{ type: 'linkednote' }, /^--type 'linkednote' is not a record type; the types are NoteEvent, LinkedNote, GoldMention, DeadLetter, ReviewMention, LabelRequest$/],
    [{ partition: '-1' }, /^--partition must be ≥ 0, got -1$/],
    [{ partition: '1.5' }, /^--partition must be an integer/],
    [{ offset: '-3' }, /^--offset must be an offset \(0 or more\), beginning or end, got '-3'$/],
    [{ offset: 'latest' }, /^--offset must be an offset/],
    [{ max: '0' }, /^--max must be ≥ 1, got 0$/],
    [{ max: 'all' }, /^--max must be a number/],
    [{ topic: 'a b' }, /^--topic 'a b' is not a topic name/],
    [{ 'from-beginning': true, offset: '3' }, /^--from-beginning and --offset both say where to start: give one$/],
  ];
  for (const [values, message] of refused) assert.throws(() => parseReadFlags(values), (error: Error & { code?: string }) => error.code === 'BAD_FLAGS' && message.test(error.message), JSON.stringify(values));
});

test("each of the config's topics is read as the type it carries; another topic needs --type", () => {
  const config = loadStageConfig({ env: {}, overrides: { topics: { input: 'in', output: 'out', deadLetter: 'dead', review: 'rev', labelRequests: 'learn', measureRequests: 'measure' } } });
  const plan = planTopics(config, { goldTopic: 'gold' });
  const types = Object.fromEntries(['in', 'out', 'dead', 'rev', 'learn', 'measure', 'gold'].map((t) => [t, recordTypeOf(t, plan, undefined)]));
  assert.deepEqual(types, { in: 'NoteEvent', out: 'LinkedNote', dead: 'DeadLetter', rev: 'ReviewMention', learn: 'LabelRequest', measure: 'LabelRequest', gold: 'GoldMention' });
  assert.equal(recordTypeOf('out', plan, 'DeadLetter'), 'DeadLetter', '--type wins');
  assert.equal(recordTypeOf('elsewhere', plan, 'GoldMention'), 'GoldMention');
  assert.throws(() => recordTypeOf('dead.replayed', plan, undefined), /^InputError: --topic dead\.replayed is none of the topics of this config \(in \(input: .*\): give --type NoteEvent\|LinkedNote\|GoldMention\|DeadLetter\|ReviewMention\|LabelRequest/);
});

test('where each partition starts: its log start, its end, or an offset in one partition (retention-removed offsets start at the log start)', () => {
  const offsets = [{ partition: 0, low: '2', high: '10' }, { partition: 1, low: '0', high: '4' }];
  const plan = (flags: Parameters<typeof parseReadFlags>[0]) => {
    const where = readPlan('t', offsets, { ...parseReadFlags(flags) });
    return { partitions: where.partitions, starts: Object.fromEntries([...where.startOffsets].map(([p, o]) => [p, Number(o)])), notes: where.notes };
  };
  assert.deepEqual(plan({}), { partitions: [0, 1], starts: { 0: 2, 1: 0 }, notes: [] });
  assert.deepEqual(plan({ offset: 'end' }), { partitions: [0, 1], starts: { 0: 10, 1: 4 }, notes: [] });
  assert.deepEqual(plan({ partition: '1', offset: '3' }), { partitions: [1], starts: { 1: 3 }, notes: [] });
  assert.deepEqual(plan({ partition: '0', offset: '10' }), { partitions: [0], starts: { 0: 10 }, notes: [] }, 'the end itself: nothing yet, or what --follow sees come');
  assert.deepEqual(plan({ partition: '0', offset: '1' }), { partitions: [0], starts: { 0: 2 }, notes: ['partition 0 of t starts at 2 (retention removed what came before): reading from there'] });
  assert.deepEqual(readPlan('t', [offsets[1]!], parseReadFlags({ offset: '3' })).partitions, [1], 'one partition: a bare offset is its');
  assert.throws(() => plan({ offset: '3' }), /^InputError: --offset 3 names no partition and t has 2: add --partition P$/);
  assert.throws(() => plan({ partition: '2' }), /^InputError: --partition 2: t has no such partition \(it has 2: 0-1\)$/);
  assert.throws(() => plan({ partition: '1', offset: '5' }), /^InputError: --offset 5: partition 1 of t ends at 4 \(the next offset written\)$/);
});

test('a record line: position, UTF-8 or hex key, ISO time; an undecodable value is an error line, not a throw', async () => {
  const codec = createRecordCodec();
  const base = { topic: 't', partition: 1, offset: '7', timestamp: '1760000000000', headers: {} };
  const { line, decoded } = await recordLine({ ...base, key: Buffer.from([0xc3, 0x28]), value: Buffer.from('x') }, 'GoldMention', codec, { showText: false, firstBytes: false });
  assert.equal(decoded, false);
  assert.deepEqual(line, { topic: 't', partition: 1, offset: '7', key: null, keyHex: 'c328', timestamp: '2025-10-09T08:53:20.000Z', type: 'GoldMention', error: { code: 'UNKNOWN_SCHEMA', message: line.error!.message } });
  const empty = await recordLine({ ...base, timestamp: '-1', key: Buffer.from('n-1'), value: null }, 'GoldMention', codec, { showText: false, firstBytes: false });
  assert.deepEqual([empty.line.key, empty.line.timestamp, empty.line.error?.code], ['n-1', null, 'UNDECODABLE']);
});

test('the line writer waits for a slow reader and stops the read when the pipe closes', async () => {
  let release!: () => void;
  const slow = new Writable({ highWaterMark: 1, write: (_chunk, _encoding, done) => (release = done) });
  let closed = 0;
  const writer = new LineWriter(slow, () => closed++);
  let written = false;
  const pending = writer.write('{"a":1}').then(() => (written = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(written, false, 'waits for drain');
  release();
  await pending;
  assert.equal(written, true);
  const broken = new PassThrough();
  const brokenWriter = new LineWriter(broken, () => closed++);
  broken.destroy(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
  await new Promise((r) => setImmediate(r));
  assert.equal(closed, 1);
  await brokenWriter.write('{"b":2}');
  writer.close();
  brokenWriter.close();
});

test('the CLI: a bad flag is one line naming it, exit 2, nothing contacted; --help documents PHI and the exit codes', () => {
  const cases: [string[], RegExp][] = [
    [['topics', 'read', '--brokers', '127.0.0.1:1', '--max', '0'], /^cuilink topics read: --max must be ≥ 1, got 0$/],
    [['topics', 'read', '--brokers', '127.0.0.1:1', '--type', 'Nope'], /^cuilink topics read: --type 'Nope' is not a record type/],
    [['topics', 'read', '--brokers', '127.0.0.1:1', '--topic', 'other'], /^cuilink topics read: --topic other is none of the topics of this config/],
    [['topics', 'read', '--brokers', '127.0.0.1:1', '--offset', 'x'], /^cuilink topics read: --offset must be an offset/],
    [['topics', 'read', '--brokers', '127.0.0.1:1', '--partition', '0', '--partition', '1'], /^cuilink topics read: --partition given more than once/],
    [['topics', 'read'], /^cuilink topics read: no brokers: pass --brokers host:port/],
  ];
  assertRefusedInOneLine(cases);
  const help = cli(['topics', 'read', '--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /note text is PHI/);
  assert.match(help.stdout, /nothing committed, never the\s+stage's group/);
  assert.match(help.stdout, /^Exit codes: 0 .*; 1 a record could not be decoded/m);
  assert.match(cli(['topics', '--help']).stdout, /^ {2}topics read +Print a topic's records as JSON lines/m);
});
