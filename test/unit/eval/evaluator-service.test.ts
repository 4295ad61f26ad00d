import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadKb } from '../../../src/kb/load.ts';
import type { LinkedNote } from '../../../src/link/types.ts';
import { loadPubTatorCorpus, type GoldMention } from '../../../src/eval/gold.ts';
import { kbOntologyView } from '../../../src/eval/kb-ontology-view.ts';
import { startEvaluatorService } from '../../../src/eval/sidecar/evaluator-service.ts';
import { goldMentionToAvro } from '../../../src/eval/gold-avro.ts';
import { KafkaEvaluatorSource } from '../../../src/eval/sidecar/kafka-evaluator-source.ts';
import { linkedNoteToAvro } from '../../../src/stream/avro/avro-conversions.ts';
import type { RecordCodec } from '../../../src/stream/avro/record-codec.ts';
import type { ConsumerJoin, ConsumerRunOptions, InboundRecord, InputCommit, KafkaClient, KafkaConsumerClient } from '../../../src/stream/kafka/client-types.ts';
import { fakeLinker, SAMPLE_TABLE } from './fake-linker.ts';
import { fixtureOntology } from './fixture-ontology.ts';
import { memoryEvaluatorSource } from './memory-evaluator-source.ts';

/** An in-memory source: push() delivers, commits are counted. */
test('service: checkpoint writes the state then commits; a restart on the same file keeps the window', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-evsvc-'));
  try {
    const corpus = await loadPubTatorCorpus('test/fixtures/eval/sample.PubTator');
    const view = kbOntologyView(await loadKb(['test/fixtures/eval/mini-kb.jsonl'], { format: 'jsonl' }));
    const linked = await fakeLinker(SAMPLE_TABLE).linkNotes(corpus.notes);
    const options = {
      joiner: { ttlMs: 60_000, maxPending: 100 }, windows: { lastN: 100, lastMs: 3_600_000 }, alerts: { minSamples: 1 },
      stateFile: join(dir, 'state.json'), snapshotIntervalMs: 60_000, port: 0, host: '127.0.0.1', log: () => {},
    };
    const source = memoryEvaluatorSource();
    const first = await startEvaluatorService(view, source, options);
    for (const g of corpus.gold.values()) source.push({ gold: g });
    for (const n of linked) source.push({ note: n });
    await first.checkpoint();
    assert.ok(existsSync(options.stateFile));
    assert.equal(source.commits, 1);
    const before = first.report().windows.count;
    await first.stop();
    assert.equal(source.commits, 2);

    const logs: string[] = [];
    const second = await startEvaluatorService(view, memoryEvaluatorSource(), { ...options, log: (l: string) => logs.push(l) });
    try {
      assert.deepEqual(second.report().windows.count, before);
      assert.equal(before.overall.n, 8);
      assert.match(logs[0]!, /restored .*state\.json: 8 samples in the count window/);
      const text = await (await fetch(`${second.url}/metrics`)).text();
      assert.match(text, /^cuilink_eval_samples\{window="count",by="overall",group="all"\} 8$/m);
    } finally {
      await second.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A Kafka consumer the test drives: `feed` hands it a partition's records; commits fail while `failCommits`. */
function scriptedKafka() {
  const kafka = { failCommits: true, committed: [] as InputCommit[], run: undefined as ConsumerRunOptions | undefined, join: undefined as ((join: ConsumerJoin) => void) | undefined };
  const consumer: Partial<KafkaConsumerClient> = {
    onJoin: (listener) => void (kafka.join = listener),
    run: async (options) => void (kafka.run = options),
    commit: async (commits) => {
      if (kafka.failCommits) throw new Error('commit refused: the group is rebalancing');
      kafka.committed.push(...commits);
    },
    stop: async () => {},
    close: async () => {},
  };
  const client = { clientId: 'fake', consumer: () => consumer as KafkaConsumerClient } as unknown as KafkaClient;
  const feed = async (topic: string, values: object[]): Promise<void> => {
    kafka.join!({ memberId: 'm', generationId: 1, assignment: [{ topic: 'gold', partitions: [0] }, { topic: 'linked', partitions: [0] }] });
    const messages: InboundRecord[] = values.map((v, offset) => ({ topic, partition: 0, offset: String(offset), timestamp: '0', key: null, value: Buffer.from(JSON.stringify(v)), headers: {} }));
    await kafka.run!.eachBatch({ topic, partition: 0, messages, membership: { groupId: 'g', memberId: 'm', generationId: 1 }, highWatermark: undefined, isStale: () => false });
  };
  return { kafka, client, feed };
}

const jsonCodec: RecordCodec = {
  format: 'avro-fingerprint',
  encode: async () => assert.fail('not used'),
  decode: async (kind, value) => (kind === 'GoldMention' ? goldMentionToAvro(JSON.parse(value!.toString())) : linkedNoteToAvro(JSON.parse(value!.toString()))) as never,
};

test('service: a commit that fails after the snapshot does not score the replayed records twice after a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-evsvc-'));
  const gold: GoldMention = { noteId: 'n1', mentionId: '0-3', ids: ['FIX:A1'], label: 'Disease', start: 0, end: 3 };
  const note: LinkedNote = {
    noteId: 'n1', linkerVersion: 'l', modelVersion: 'm', indexVersion: 'i', linkedAt: 0,
    mentions: [{ mentionId: '0-3', start: 0, end: 3, label: 'Disease', conceptId: 'FIX:A1', conceptName: 'A1', semanticTypes: [], score: 0.9, confidence: null, via: 'dense', nil: false, reranked: false, candidates: [{ conceptId: 'FIX:A1', name: 'A1', semanticTypes: [], score: 0.9, retrievalScore: 0.9, exact: false, via: 'dense' }] }],
  };
  const options = {
    joiner: { ttlMs: 60_000, maxPending: 100 }, windows: { lastN: 100, lastMs: 3_600_000 }, alerts: { minSamples: 1 },
    stateFile: join(dir, 'state.json'), snapshotIntervalMs: 60_000, port: 0, host: '127.0.0.1', log: () => {},
  };
  const sourceOn = (client: KafkaClient) => new KafkaEvaluatorSource({ kafka: client, codec: jsonCodec, linkedTopic: 'linked', goldTopic: 'gold', groupId: 'g', log: () => {} });
  const first = scriptedKafka();
  const running = await startEvaluatorService(fixtureOntology, sourceOn(first.client), options);
  let second: Awaited<ReturnType<typeof startEvaluatorService>> | undefined;
  try {
    await first.feed('gold', [gold]);
    await first.feed('linked', [note]);
    await assert.rejects(running.checkpoint(), /commit refused/); // the snapshot is on disk, Kafka's offsets are not
    assert.equal(running.report().samplesScored, 1);

    // The process dies here. Its successor reads both records again from Kafka's (absent) offsets.
    const restarted = scriptedKafka();
    restarted.kafka.failCommits = false;
    const source = sourceOn(restarted.client);
    second = await startEvaluatorService(fixtureOntology, source, options);
    await restarted.feed('gold', [gold]);
    await restarted.feed('linked', [note]);
    const report = second.report();
    assert.equal(report.samplesScored, 1);
    assert.equal(report.windows.count.overall.n, 1);
    assert.deepEqual([report.goldSeen, report.notesSeen, report.join.joined], [1, 1, 1]);
    assert.equal(source.redelivered, 2);
    await second.checkpoint();
    assert.deepEqual(restarted.kafka.committed.map((c) => [c.topic, c.offset]).sort(), [['gold', '1'], ['linked', '1']]);
  } finally {
    first.kafka.failCommits = false;
    await second?.stop();
    await running.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
