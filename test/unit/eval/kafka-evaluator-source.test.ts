import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CuilinkError } from '../../../src/kb/errors.ts';
import type { RecordCodec } from '../../../src/stream/avro/record-codec.ts';
import type { ConsumerJoin, ConsumerRunOptions, GroupMembership, InboundRecord, InputCommit, KafkaClient, KafkaConsumerClient } from '../../../src/stream/kafka/client-types.ts';
import { goldMentionToAvro } from '../../../src/eval/gold-avro.ts';
import type { GoldMention } from '../../../src/eval/gold.ts';
import { KafkaEvaluatorSource } from '../../../src/eval/sidecar/kafka-evaluator-source.ts';
import { linkedNoteToAvro } from '../../../src/stream/avro/avro-conversions.ts';
import { CANDIDATES_CUT_HEADER } from '../../../src/stream/output-fitter.ts';

// The source on a scripted consumer: what it hands the evaluator when the consumer reads records
// again (after a failed record, the consumer restarts from the committed offsets), and what it commits.

function record(partition: number, offset: number, noteId: string): InboundRecord {
  return { topic: 'gold', partition, offset: String(offset), timestamp: '0', key: null, value: Buffer.from(noteId), headers: {} };
}

/** Decodes a value as the gold of note `value`; `failures` names notes whose first decodes fail (retriable or not). */
function scriptedCodec(failures: Map<string, { times: number; retriable: boolean }>): RecordCodec {
  return {
    format: 'avro-fingerprint',
    encode: async () => assert.fail('not used'),
    decode: async (_kind, value) => {
      const noteId = value!.toString();
      const failure = failures.get(noteId);
      if (failure !== undefined && failure.times > 0) {
        failure.times--;
        throw new CuilinkError(failure.retriable ? 'REGISTRY_UNAVAILABLE' : 'UNDECODABLE', `cannot decode ${noteId}`, { retriable: failure.retriable });
      }
      return goldMentionToAvro({ noteId, mentionId: '0-1', ids: ['C1'], label: 'X', start: 0, end: 1 }) as never;
    },
  };
}

function scriptedConsumer() {
  const state = {
    run: undefined as ConsumerRunOptions | undefined,
    join: undefined as ((join: ConsumerJoin) => void) | undefined,
    commits: [] as InputCommit[][],
    stopped: 0,
    closed: 0,
  };
  const consumer: Partial<KafkaConsumerClient> = {
    onJoin: (listener) => void (state.join = listener),
    run: async (options) => void (state.run = options),
    commit: async (commits) => void state.commits.push(commits),
    stop: async () => void state.stopped++,
    close: async () => void state.closed++,
  };
  const client = { clientId: 'fake', consumer: () => consumer as KafkaConsumerClient } as unknown as KafkaClient;
  return { client, state };
}

const member = (generationId: number): GroupMembership => ({ groupId: 'evaluator', memberId: 'm', generationId });

async function deliver(state: ReturnType<typeof scriptedConsumer>['state'], partition: number, records: InboundRecord[], generationId: number): Promise<void> {
  await state.run!.eachBatch({ topic: 'gold', partition, messages: records, membership: member(generationId), highWatermark: undefined, isStale: () => false });
}

test('records read again after a failed record are not handed to the evaluator twice', async () => {
  const { client, state } = scriptedConsumer();
  const source = new KafkaEvaluatorSource({ kafka: client, codec: scriptedCodec(new Map([['n2', { times: 1, retriable: true }]])), linkedTopic: 'linked', goldTopic: 'gold', groupId: 'evaluator', log: () => {} });
  const handed: GoldMention[] = [];
  await source.start({ gold: (g) => void handed.push(g), linkedNote: () => assert.fail('no linked notes') });
  state.join!({ memberId: 'm', generationId: 1, assignment: [{ topic: 'gold', partitions: [0] }] });
  const batch = [record(0, 0, 'n0'), record(0, 1, 'n1'), record(0, 2, 'n2'), record(0, 3, 'n3')];
  // The registry is down at n2: the batch is handed back, and the consumer reads from the committed offset (none: 0).
  await assert.rejects(deliver(state, 0, batch, 1), /cannot decode n2/);
  await deliver(state, 0, batch, 1);
  assert.deepEqual(handed.map((g) => g.noteId), ['n0', 'n1', 'n2', 'n3']);
});

test('an undecodable record is skipped and counted; commit() commits what was delivered, once, under the latest membership, for partitions still assigned', async () => {
  const { client, state } = scriptedConsumer();
  const lines: string[] = [];
  const source = new KafkaEvaluatorSource({ kafka: client, codec: scriptedCodec(new Map([['bad', { times: 1, retriable: false }]])), linkedTopic: 'linked', goldTopic: 'gold', groupId: 'evaluator', log: (l) => void lines.push(l) });
  await source.start({ gold: () => {}, linkedNote: () => {} });
  state.join!({ memberId: 'm', generationId: 1, assignment: [{ topic: 'gold', partitions: [0, 1] }] });
  await deliver(state, 0, [record(0, 0, 'n0'), record(0, 1, 'bad')], 1);
  await deliver(state, 1, [record(1, 5, 'n5')], 1);
  assert.deepEqual(source.skipped, { UNDECODABLE: 1 });
  assert.deepEqual(lines, ['evaluator: skipped gold[0]@1: UNDECODABLE: cannot decode bad']);

  // A rebalance: partition 1 went elsewhere; partition 0's records, read under generation 1, are in the evaluator and committed under 2.
  state.join!({ memberId: 'm', generationId: 2, assignment: [{ topic: 'gold', partitions: [0] }] });
  await source.commit();
  assert.deepEqual(state.commits, [[{ topic: 'gold', partition: 0, offset: '2', membership: member(2) }]]);
  await source.commit();
  assert.equal(state.commits.length, 1, 'nothing new: no commit');

  await source.stop();
  assert.equal(state.stopped, 1);
  await deliver(state, 0, [record(0, 2, 'n2')], 2);
  await source.commit();
  assert.equal(state.commits.length, 1, 'nothing is delivered after stop()');
  await source.close();
  await source.close();
  assert.equal(state.closed, 1);
});

test('after a restart, records below the snapshot offsets are ignored and counted; the restored offsets go with the next commit', async () => {
  const { client, state } = scriptedConsumer();
  const lines: string[] = [];
  const source = new KafkaEvaluatorSource({ kafka: client, codec: scriptedCodec(new Map()), linkedTopic: 'linked', goldTopic: 'gold', groupId: 'evaluator', log: (l) => void lines.push(l) });
  const handed: string[] = [];
  // The snapshot holds gold[0] up to offset 2: its commit failed, so Kafka hands out offset 0 again.
  await source.start({ gold: (g) => void handed.push(g.noteId), linkedNote: () => {} }, [{ topic: 'gold', partition: 0, next: '2' }, { topic: 'gold', partition: 1, next: '7' }]);
  state.join!({ memberId: 'm', generationId: 1, assignment: [{ topic: 'gold', partitions: [0, 1] }] });
  await deliver(state, 0, [record(0, 0, 'n0'), record(0, 1, 'n1'), record(0, 2, 'n2')], 1);
  assert.deepEqual(handed, ['n2']);
  assert.equal(source.redelivered, 2);
  assert.deepEqual(lines, ["evaluator: ignored 2 records of gold[0] below offset 3: the evaluator's state holds them already"]);
  assert.deepEqual(source.positions(), [{ topic: 'gold', partition: 0, next: '3' }, { topic: 'gold', partition: 1, next: '7' }]);
  await source.commit();
  assert.deepEqual(state.commits, [[{ topic: 'gold', partition: 0, offset: '3', membership: member(1) }, { topic: 'gold', partition: 1, offset: '7', membership: member(1) }]]);
});

test('a LinkedNote with the candidates-cut header is handed over with the count kept', async () => {
  const { client, state } = scriptedConsumer();
  const note = { noteId: 'n1', mentions: [], linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 0 };
  const codec: RecordCodec = { format: 'avro-fingerprint', encode: async () => assert.fail('not used'), decode: async () => linkedNoteToAvro(note) as never };
  const source = new KafkaEvaluatorSource({ kafka: client, codec, linkedTopic: 'linked', goldTopic: 'gold', groupId: 'evaluator', log: () => {} });
  const kept: (number | undefined)[] = [];
  await source.start({ gold: () => assert.fail('no gold'), linkedNote: (_note, candidatesKept) => void kept.push(candidatesKept) });
  const linked = (offset: number, headers: InboundRecord['headers']): InboundRecord => ({ ...record(0, offset, 'n1'), topic: 'linked', headers });
  const messages = [linked(0, {}), linked(1, { [CANDIDATES_CUT_HEADER]: Buffer.from('2') }), linked(2, { [CANDIDATES_CUT_HEADER]: Buffer.from('bogus') })];
  await state.run!.eachBatch({ topic: 'linked', partition: 0, messages, membership: member(1), highWatermark: undefined, isStale: () => false });
  assert.deepEqual(kept, [undefined, 2, 0]);
});
