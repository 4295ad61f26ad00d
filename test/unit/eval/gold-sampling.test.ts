import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inGoldSample } from '../../../src/eval/gold-sampling.ts';
import { checkGoldCorpus, publishGoldSample } from '../../../src/eval/gold-publisher.ts';
import { avroToGoldMention } from '../../../src/eval/gold-avro.ts';
import { MAX_GOLD_IDS } from '../../../src/eval/gold.ts';
import { InputError } from '../../../src/kb/errors.ts';
import { PlainAvroCodec } from '../../../src/stream/avro/index.ts';
import type { KafkaClient, KafkaProducerClient, TopicRecords } from '../../../src/stream/kafka/client-types.ts';

test('gold sampling: deterministic per note id and seed, close to the fraction, 0 and 1 exact', () => {
  const ids = Array.from({ length: 10_000 }, (_, i) => String(1_000_000 + i * 7));
  const picked = ids.filter((id) => inGoldSample(id, 0.1, 42));
  assert.ok(Math.abs(picked.length / ids.length - 0.1) < 0.01, `${picked.length}`);
  assert.deepEqual(ids.filter((id) => inGoldSample(id, 0.1, 42)), picked);
  const other = ids.filter((id) => inGoldSample(id, 0.1, 43));
  assert.notDeepEqual(other, picked);
  assert.ok(ids.every((id) => inGoldSample(id, 1, 1)));
  assert.ok(!ids.some((id) => inGoldSample(id, 0, 1)));
  // A larger fraction keeps every note a smaller one picked (same seed).
  const quarter = new Set(ids.filter((id) => inGoldSample(id, 0.25, 42)));
  assert.ok(picked.every((id) => quarter.has(id)));
});

test('gold sampling: consecutive note ids are drawn independently (not all in or all out together)', () => {
  let allOrNone = 0;
  for (let block = 0; block < 200; block++) {
    const ids = Array.from({ length: 12 }, (_, i) => String(2000 + block * 12 + i));
    const picked = ids.filter((id) => inGoldSample(id, 0.5, 1 + (block % 7))).length;
    if (picked === 0 || picked === ids.length) allOrNone++;
  }
  // Independent draws: P(all or none of 12 at ½) = 1/2048 per block.
  assert.ok(allOrNone <= 2, `${allOrNone} of 200 blocks of consecutive ids were sampled all or nothing`);
});

/** A Kafka client whose producer keeps what it is sent (publishGoldSample writes and reads nothing else). */
function recordingKafka(): { kafka: KafkaClient; sent: TopicRecords[] } {
  const sent: TopicRecords[] = [];
  const producer: Partial<KafkaProducerClient> = { connect: async () => {}, send: async (requests) => void sent.push(...requests), close: async () => {} };
  return { kafka: { clientId: 'gold-sample-test', producer: () => producer as KafkaProducerClient } as unknown as KafkaClient, sent };
}

test('gold-sample: a corpus label naming more ids than the gold topic readers take is refused, naming file, document and mention, before anything is published', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-gold-sample-'));
  try {
    const corpus = join(dir, 'corpus.PubTator');
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `D${String(100_000 + i)}`).join('|');
    // The readable note comes first: the whole corpus is refused, not the notes after the bad label.
    writeFileSync(corpus, ['1|t|Anemia.', '1|a|', `1\t0\t6\tAnemia\tDisease\t${ids(MAX_GOLD_IDS)}`, '', '2|t|Many things.', '2|a|', `2\t0\t4\tMany\tDisease\t${ids(MAX_GOLD_IDS + 1)}`, ''].join('\n'));
    // publishGoldSample takes only a corpus checkGoldCorpus passed, so a refused one never reaches it.
    await assert.rejects(
      checkGoldCorpus(corpus, undefined),
      (error: Error) => error instanceof InputError && error.message.includes(`${corpus}:7`) && error.message.includes('document 2') && error.message.includes('mention 0-4') && error.message.includes(`${MAX_GOLD_IDS + 1} concept ids`),
    );
    // At the limit the label is published, and the evaluator reads it back.
    writeFileSync(corpus, ['1|t|Anemia.', '1|a|', `1\t0\t6\tAnemia\tDisease\t${ids(MAX_GOLD_IDS)}`, ''].join('\n'));
    const { kafka, sent } = recordingKafka();
    const codec = new PlainAvroCodec();
    const result = await publishGoldSample({ kafka, codec, corpus: await checkGoldCorpus(corpus, undefined), fraction: 1, seed: 1, goldTopic: 'gold' });
    assert.equal(result.goldPublished, 1);
    const message = sent[0]!.messages[0]!;
    const decoded = await codec.decode('GoldMention', message.value as Buffer, message.headers);
    assert.equal(avroToGoldMention(decoded).ids.length, MAX_GOLD_IDS);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
