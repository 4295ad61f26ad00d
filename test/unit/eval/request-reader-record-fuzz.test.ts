import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readLabelRequestTopic } from '../../../src/eval/annotation/label-request-topic.ts';
import { mentionKey } from '../../../src/eval/gold.ts';
import { readRequestedMentions } from '../../../src/eval/review-reader.ts';
import { avroToLinkedNote, labelProposalToAvro, linkedMentionToReview, PlainAvroCodec } from '../../../src/stream/avro/index.ts';
import type { InboundRecord, KafkaClient, KafkaConsumerClient } from '../../../src/stream/kafka/client-types.ts';
import { RECORD_FAULT_CODES } from '../../../src/stream/dead-letter-policy.ts';
import { consumerBases, inbound, MEMBERSHIP } from '../../support/consumer-fuzz-bed.ts';
import { consumerMutant, mutationNames, singleObjectOf, type ConsumerBase, type ConsumerMutant } from '../../support/consumer-mutants.ts';
import { lcg } from '../../support/lcg.ts';
import { pick } from '../../support/note-mutations.ts';

// The readers that answer the stage's requests (`cuilink gold-sample --review-topic` and
// `--request-topic`, `cuilink annotate export --topic`) read a review or label-request topic
// anyone may write to. A record there that does not decode must not fail the read: the mentions
// of every other record are still what the stage asked for. Seeded byte-level mutants of valid
// ReviewMention and LabelRequest records (the stage's own conversions of the fixture linker's
// output) go between two valid records through each reader's own path (readTopicToEnd over a
// consumer that hands the topic over, the real codec): the read ends, both valid records are in
// what it returns, and the mutant is in it or refused with a record-fault code.

const SEEDS = process.env.CUILINK_FUZZ_SEED ? [Number(process.env.CUILINK_FUZZ_SEED)] : [20_261_204, 23];
const CASES_PER_SEED = Number(process.env.CUILINK_FUZZ_CASES ?? 120);

let root: string;
let reviews: ConsumerBase[];
let requests: ConsumerBase[];

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-reader-fuzz-'));
  const linked = (await consumerBases(root)).linked.map(avroToLinkedNote);
  reviews = linked.flatMap((note) => note.mentions.map((m) => ({ kind: 'ReviewMention' as const, record: linkedMentionToReview(note, m) })));
  requests = linked.flatMap((note) =>
    note.mentions.map((mention) => ({
      kind: 'LabelRequest' as const,
      record: labelProposalToAvro({ stream: 'learn', policy: 'confidence', priority: 0.5, recurrence: 1, noteId: note.noteId, mention, versions: { ...note, memoryVersion: null }, requestedAt: 1_700_000_000_000 }),
    })),
  );
});
after(() => rmSync(root, { recursive: true, force: true }));

/** A Kafka client holding one topic of one partition: its consumer hands every record over in one batch. */
function topicOf(records: InboundRecord[]): KafkaClient {
  const consumer: Partial<KafkaConsumerClient> = {
    onJoin: () => {},
    onCrash: () => {},
    run: async ({ eachBatch }) => {
      await eachBatch({ topic: 'asked', partition: 0, messages: records, membership: MEMBERSHIP, highWatermark: String(records.length), isStale: () => false });
    },
    close: async () => {},
  };
  const admin = { topicOffsets: async () => [{ partition: 0, low: '0', high: String(records.length) }], close: async () => {} };
  return { clientId: 'fuzz', consumer: () => consumer as KafkaConsumerClient, admin: () => admin } as unknown as KafkaClient;
}

const keyOf = (base: ConsumerBase) => mentionKey(base.record.noteId, (base.record as unknown as { mentionId: string }).mentionId);

/** Why a read of [a, mutant, b] breaks the rule, or undefined. */
async function violation(mutant: ConsumerMutant, a: ConsumerBase, b: ConsumerBase): Promise<string | undefined> {
  const records = [{ value: singleObjectOf(a.kind, a.record), headers: [] }, mutant, { value: singleObjectOf(b.kind, b.record), headers: [] }].map((r, i) => inbound('asked', r, i));
  const codec = new PlainAvroCodec();
  const kind = mutant.kind as 'ReviewMention' | 'LabelRequest';
  try {
    const read = await readRequestedMentions(topicOf(records), codec, 'asked', kind);
    const keys = read.mentions;
    if (!keys.has(keyOf(a)) || !keys.has(keyOf(b))) return `gold-sample's read lost a valid record's mention: ${JSON.stringify([...keys]).slice(0, 200)}`;
    const refused = read.refused.map((r) => r.code);
    if (refused.some((code) => !RECORD_FAULT_CODES.has(code))) return `gold-sample's read refused with ${refused.join(', ')}, not a record-fault code`;
    if (mutant.expect === 'delivered' && refused.length > 0) return `gold-sample's read refused a readable record: ${refused.join(', ')}`;
    if (mutant.expect !== undefined && mutant.expect !== 'delivered' && refused.length === 0) return `gold-sample's read took a record that does not decode`;
  } catch (error) {
    return `gold-sample's read failed (gold-sample exits, and fails again on every run while the record is on the topic): ${(error as { code?: string }).code ?? ''} ${(error as Error).message.slice(0, 300)}`;
  }
  if (kind !== 'LabelRequest') return undefined;
  try {
    const batch = await readLabelRequestTopic(topicOf(records), codec, 'asked');
    if (batch.requests.length + batch.refused.length !== 3) return `annotate export's read returned ${batch.requests.length} requests and ${batch.refused.length} refusals of 3 records`;
  } catch (error) {
    return `annotate export's read failed: ${(error as { code?: string }).code ?? ''} ${(error as Error).message.slice(0, 300)}`;
  }
  return undefined;
}

test('gold-sample\'s read of a review topic refuses a record that does not decode and keeps the mentions of the others', async () => {
  // Before, the first such record ended the read with its decode error: `gold-sample --review-topic`
  // (and --request-topic) exited 1, and did so again on every run while the record was on the topic.
  const [a, b] = [reviews[0]!, reviews[1]!];
  const records = [{ value: singleObjectOf(a.kind, a.record), headers: [] }, { value: Buffer.alloc(0), headers: [] }, { value: singleObjectOf(b.kind, b.record), headers: [] }].map((r, i) => inbound('asked', r, i));
  const read = await readRequestedMentions(topicOf(records), new PlainAvroCodec(), 'asked', 'ReviewMention');
  assert.deepEqual([...read.mentions].sort(), [keyOf(a), keyOf(b)].sort());
  assert.deepEqual(read.refused, [{ where: 'asked partition 0 offset 1', code: 'UNDECODABLE' }]);
});

test('a review or label-request record that does not decode is refused, and the read goes on to the topic\'s end', { timeout: 120_000 }, async () => {
  const failures: string[] = [];
  const seen = new Set<string>();
  for (const seed of SEEDS) {
    const random = lcg(seed);
    for (let i = 0; i < CASES_PER_SEED && failures.length < 10; i++) {
      const bases = random() < 0.5 ? reviews : requests;
      const mutant = consumerMutant(random, pick(random, bases));
      seen.add(`${mutant.kind} ${mutant.mutation}`);
      const why = await violation(mutant, pick(random, bases), pick(random, bases));
      if (why !== undefined) failures.push(`seed ${seed} case ${i} [${mutant.kind} ${mutant.mutation} of ${mutant.base}] ${mutant.what}: ${why}`);
    }
  }
  assert.deepEqual(failures, []);
  if (process.env.CUILINK_FUZZ_SEED === undefined) assert.deepEqual([...seen].sort(), (['ReviewMention', 'LabelRequest'] as const).flatMap((k) => mutationNames(k).map((m) => `${k} ${m}`)).sort());
});
