import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BiEncoder } from '../../../src/encode/bi-encoder.ts';
import { readModelManifest } from '../../../src/encode/manifest.ts';
import { MAX_GOLD_IDS } from '../../../src/eval/gold.ts';
import { MemoryUpdater, type MemoryUpdaterOptions } from '../../../src/eval/memory-updater.ts';
import { DEFAULT_MODEL_DIR } from '../../../src/link/default-index.ts';
import { MemoryLearner } from '../../../src/link/memory-learner.ts';
import { resolveMemoryDir } from '../../../src/retrieve/memory-root.ts';
import { MemoryStore } from '../../../src/retrieve/memory-store.ts';
import { ConfluentAvroCodec, PlainAvroCodec } from '../../../src/stream/avro/index.ts';
import { RECORD_FAULT_CODES } from '../../../src/stream/dead-letter-policy.ts';
import type { ConsumerRunOptions } from '../../../src/stream/kafka/client-types.ts';
import { normalizeName } from '../../../src/text/normalize.ts';
import { consumerBases, deliverOne, inbound, scriptedKafka } from '../../support/consumer-fuzz-bed.ts';
import { confluentConsumerMutant, consumerMutant, drawBase, mutationNames, registerConsumerSchemas, singleObjectOf, type ConsumerBases, type ConsumerExpectation, type ConsumerRegistryIds } from '../../support/consumer-mutants.ts';
import { TokenizingTrigramEncoder } from '../../support/fixture-linker.ts';
import { lcg } from '../../support/lcg.ts';
import { BASE_NOTES, mutant } from '../../support/note-mutants.ts';
import { pick, rawNote, singleObject, type MutantRecord } from '../../support/note-mutations.ts';
import { startSchemaRegistryStandIn, type SchemaRegistryStandIn } from '../../support/schema-registry-stand-in.ts';

// The product rule for the memory updater (docs/memory.md): a record that cannot be decoded, or a
// label the memory cannot hold, is skipped with a log line naming its code; nothing else stops it,
// and every memory version it publishes opens. Seeded mutants of valid NoteEvents (the stage
// fuzz's catalogue) and GoldMentions go, one record per fetched batch, through the updater's own
// path (the real Avro codecs, the note/gold join, MemoryLearner over the shipped bi-encoder's
// tokenizer with the trigram stand-in for ONNX, a real memory in a temp dir, with and without raw
// text), each followed by a flush (a new version published when a label was joined) and the
// memory reopened as a linker and a restarted updater open it. A flush that fails is the updater
// exiting 1; it reads both topics from the beginning on restart, and exits again on the same
// label. A failure names its seed, case, mutation and base note; rerun it alone with
// CUILINK_FUZZ_SEED=<seed> CUILINK_FUZZ_CASES=<case + 1>.

const SEEDS = process.env.CUILINK_FUZZ_SEED ? [Number(process.env.CUILINK_FUZZ_SEED)] : [20_261_203, 17, 6_007];
const CASES_PER_SEED = Number(process.env.CUILINK_FUZZ_CASES ?? 160);
/** A fresh memory root this often: each flush rewrites the whole memory, so a long-lived one would slow the run. */
const RECORDS_PER_MEMORY = 120;

/** The learner's view of an encoder: the shipped model's tokenizer, a context-mode query (the note's offsets matter), trigram vectors. */
function standInEncoder(): BiEncoder {
  const trigram = new TokenizingTrigramEncoder();
  const query = { ...readModelManifest(DEFAULT_MODEL_DIR).query, mode: 'context' as const };
  return { modelId: trigram.modelId, modelSha256: 'e'.repeat(64), dims: trigram.dims, batchIndependent: true, manifest: { query }, encode: (texts: string[]) => trigram.encode(texts) } as unknown as BiEncoder;
}

let root: string;
let bases: ConsumerBases;
let registry: SchemaRegistryStandIn;
let ids: ConsumerRegistryIds;
const learner = new MemoryLearner(standInEncoder());

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-updater-fuzz-'));
  bases = await consumerBases(root);
  registry = await startSchemaRegistryStandIn();
  ids = registerConsumerSchemas(registry);
});
after(async () => {
  await registry.close();
  rmSync(root, { recursive: true, force: true });
});

interface Bed {
  updater: MemoryUpdater;
  options: MemoryUpdaterOptions;
  run: ConsumerRunOptions;
  logs: string[];
  records: number;
  offset: number;
}

let roots = 0;

/** An updater on a memory root of its own (with raw text over the plain codec, without over the Confluent one), given every base note. */
async function bed(format: 'plain' | 'confluent'): Promise<Bed> {
  const { kafka, run } = scriptedKafka();
  const logs: string[] = [];
  const options: MemoryUpdaterOptions = {
    kafka, codec: format === 'plain' ? new PlainAvroCodec() : new ConfluentAvroCodec({ url: registry.url }), notesTopic: 'notes', goldTopic: 'gold', groupId: 'updater',
    root: join(root, `memory-${roots++}`), learner, rawText: format === 'plain', learnFraction: 0.8, splitSeed: 3, flushMs: 3_600_000,
    // Few notes held, so that gold waits for its note, and some finds the waiting room full.
    maxNotes: 8, log: (line) => void logs.push(line), now: () => 0,
  };
  const updater = new MemoryUpdater(options);
  await updater.start();
  const b: Bed = { updater, options, run: run(), logs, records: 0, offset: 0 };
  for (const note of BASE_NOTES) await deliverOne(b.run, inbound('notes', { value: singleObject(rawNote(note)), headers: [] }, b.offset++));
  return b;
}

/** Why the updater's handling of `record` breaks the rule, or undefined when it does not. */
async function violation(b: Bed, topic: 'notes' | 'gold', record: Pick<MutantRecord, 'value' | 'headers' | 'key'>, expect: ConsumerExpectation | undefined): Promise<string | undefined> {
  const offset = b.offset++;
  b.records++;
  const logged = b.logs.length;
  try {
    await deliverOne(b.run, inbound(topic, record, offset));
  } catch (error) {
    return `eachBatch threw (the consumer reads the record again, and throws again): ${(error as { code?: string }).code ?? ''} ${(error as Error).stack ?? String(error)}`.slice(0, 2000);
  }
  const skip = b.logs.slice(logged).map((line) => new RegExp(`^memory-updater: skipped ${topic}\\[0\\]@${offset}: (\\w+)`).exec(line)?.[1]).find((code) => code !== undefined);
  if (skip !== undefined && !RECORD_FAULT_CODES.has(skip)) return `skipped with ${skip}, not a record-fault code`;
  if (expect === 'delivered' && skip !== undefined) return `expected to be taken, skipped with ${skip}`;
  if (expect !== undefined && expect !== 'delivered' && skip === undefined) return `expected to be skipped (${JSON.stringify(expect)}), taken`;
  if (typeof expect === 'object' && skip !== expect.code) return `expected ${expect.code}, skipped with ${skip}`;
  const version = b.updater.stats.version;
  try {
    await b.updater.flush();
  } catch (error) {
    return `flush failed (the updater exits 1, and again after every restart): ${(error as { code?: string }).code ?? ''} ${(error as Error).message.slice(0, 300)}`;
  }
  if (!b.updater.live) return 'the updater is not live';
  if (b.updater.stats.version === version) return undefined;
  try {
    // As a linker loads a new version, and as the updater's restart opens the root.
    const reopened = MemoryStore.open(resolveMemoryDir(b.options.root).dir, normalizeName);
    new MemoryUpdater({ ...b.options, log: () => {} });
    if (reopened.version !== b.updater.stats.version) return `reopened ${reopened.version}, published ${b.updater.stats.version}`;
  } catch (error) {
    return `the memory does not reopen: ${(error as { code?: string }).code ?? ''} ${(error as Error).message.slice(0, 300)}`;
  }
  return undefined;
}

test('a gold label without a concept id (NIL) or with an empty one is not learned, and the labels after it are: every flush publishes', { timeout: 60_000 }, async () => {
  // The gold topic's schema reads "empty means the mention is NIL", and the memory holds only
  // labels that name a concept (src/retrieve/memory-record.ts): before the updater left such labels
  // out, either one was joined with its note, failed the whole batch at the next flush (BAD_MEMORY),
  // and the updater exited 1, then again on the same label after every restart (it reads both
  // topics from the beginning), learning nothing more.
  const b = await bed('plain');
  try {
    const gold = bases.gold.find((g) => g.noteId === 'n-edges')!;
    const others = bases.gold.filter((g) => g.noteId === 'n-edges' && g !== gold);
    const send = (record: object) => deliverOne(b.run, inbound('gold', { value: singleObjectOf('GoldMention', record), headers: [] }, b.offset++));
    await send({ ...gold, ids: [] });
    await send({ ...others[0]!, ids: ['MESH:D011014', ' '] });
    await send(others[1]!);
    await b.updater.flush();
    assert.ok(b.updater.live);
    const learned = MemoryStore.open(resolveMemoryDir(b.options.root).dir, normalizeName).list();
    assert.deepEqual(learned.map((r) => r.mentionId), [others[1]!.mentionId]);
    assert.equal(b.updater.stats.nilSkipped, 1);
    assert.deepEqual(b.logs.filter((line) => /skipped/.test(line)), [`memory-updater: skipped gold[0]@${b.offset - 2}: BAD_MENTION`]);
  } finally {
    await b.updater.stop().catch(() => {});
  }
});

test('a gold label naming more concept ids than any label may (MAX_GOLD_IDS) is skipped as RECORD_TOO_LARGE; one naming that many is learned', { timeout: 60_000 }, async () => {
  // The evaluator refuses such a label (docs/evaluator.md); learned here, the memory would hold a
  // label voting for thousands of concepts, written into every later version.
  const b = await bed('plain');
  try {
    const [first, second] = bases.gold.filter((g) => g.noteId === 'n-edges');
    const send = (record: object) => deliverOne(b.run, inbound('gold', { value: singleObjectOf('GoldMention', record), headers: [] }, b.offset++));
    const idsOf = (n: number) => [...first!.ids, ...Array.from({ length: n - first!.ids.length }, (_, i) => `X:${i}`)];
    await send({ ...first!, ids: idsOf(MAX_GOLD_IDS + 1) });
    await send({ ...second!, ids: idsOf(MAX_GOLD_IDS) });
    await b.updater.flush();
    const learned = MemoryStore.open(resolveMemoryDir(b.options.root).dir, normalizeName).list();
    assert.deepEqual(learned.map((r) => [r.mentionId, r.ids.length]), [[second!.mentionId, MAX_GOLD_IDS]]);
    assert.deepEqual(b.logs.filter((line) => /skipped/.test(line)), [`memory-updater: skipped gold[0]@${b.offset - 2}: RECORD_TOO_LARGE`]);
  } finally {
    await b.updater.stop().catch(() => {});
  }
});

test('a gold label for a span its note does not have is not learned: a negative or reversed span is skipped, one past the note\'s end waits for a version that long', { timeout: 60_000 }, async () => {
  // A label whose mention id the note's NER did not give is learned for the note's text at its
  // span. Before, the span was not checked: [-9, -1) was learned as the note's last eight
  // characters (slice counts from the end), and [31, 1000) as its tail, each with the label's
  // concept: a surface nobody labelled, voting for that concept in every later note.
  const b = await bed('plain');
  try {
    const note = BASE_NOTES.find((n) => n.noteId === 'n-edges')!;
    const gold = bases.gold.find((g) => g.noteId === note.noteId)!;
    const send = (record: object) => deliverOne(b.run, inbound('gold', { value: singleObjectOf('GoldMention', record), headers: [] }, b.offset++));
    await send({ ...gold, mentionId: 'added-1', start: -9, end: -1 });
    await send({ ...gold, mentionId: 'added-2', start: 31, end: 1000 });
    await send({ ...gold, mentionId: 'added-3', start: 10, end: 5 });
    await send({ ...gold, mentionId: 'added-4', start: 15, end: 26 });
    await b.updater.flush();
    const learned = MemoryStore.open(resolveMemoryDir(b.options.root).dir, normalizeName).list();
    assert.deepEqual(learned.map((r) => [r.mentionId, r.text]), [['added-4', note.text.slice(15, 26)]]);
    assert.deepEqual(b.logs.filter((line) => /skipped/.test(line)).map((line) => line.replace(/@\d+/, '')), ['memory-updater: skipped gold[0]: BAD_SPAN', 'memory-updater: skipped gold[0]: BAD_SPAN']);
    assert.equal(b.updater.stats.waiting, 1, 'the label past the end waits');
  } finally {
    await b.updater.stop().catch(() => {});
  }
});

test('every mutant NoteEvent and GoldMention is taken or skipped with a record-fault code; every flush publishes, and every version opens', { timeout: 300_000 }, async () => {
  const all = { plain: await bed('plain'), confluent: await bed('confluent') };
  const failures: string[] = [];
  const seen = new Map<string, number>();
  try {
    for (const seed of SEEDS) {
      const random = lcg(seed);
      for (let i = 0; i < CASES_PER_SEED && failures.length < 10; i++) {
        const format = random() < 0.3 ? 'confluent' : 'plain';
        const roll = random();
        let what: string;
        let why: string | undefined;
        if (roll < 0.25) {
          // A note: a mutant of the stage fuzz's catalogue, or a base note again (its gold may wait for it).
          const note = random() < 0.4 ? { ...pick(random, BASE_NOTES), mutation: 'base note' } : undefined;
          const record = note ? { value: singleObject(rawNote(note)), headers: [], what: note.noteId, mutation: note.mutation, base: note.noteId } : mutant(random);
          what = `NoteEvent ${record.mutation} of ${record.base}] ${record.what}`;
          seen.set(`NoteEvent ${note ? 'base note' : 'mutant'}`, 1);
          why = await violation(all[format], 'notes', record, note ? 'delivered' : undefined);
        } else {
          const record = format === 'confluent' && random() < 0.5 ? confluentConsumerMutant(random, 'GoldMention', bases, ids) : consumerMutant(random, drawBase(random, 'GoldMention', bases));
          if (format === 'confluent' && record.mutation !== 'confluent' && typeof record.expect === 'object') record.expect = 'skipped';
          // The updater's own rules: a label with an empty or blank concept id, or a span no note has, is the record's fault.
          const { ids: conceptIds, start, end } = record.fields ?? {};
          if (record.expect === 'delivered' && Array.isArray(conceptIds) && conceptIds.some((id) => typeof id === 'string' && id.trim() === '')) record.expect = { code: 'BAD_MENTION' };
          else if (record.expect === 'delivered' && typeof start === 'number' && typeof end === 'number' && !(start >= 0 && end > start)) record.expect = { code: 'BAD_SPAN' };
          what = `GoldMention ${record.mutation} of ${record.base}] ${record.what}`;
          seen.set(`GoldMention ${record.mutation}`, 1);
          why = await violation(all[format], 'gold', record, record.expect);
        }
        if (why !== undefined) failures.push(`seed ${seed} case ${i} [${format}, ${what}: ${why}`);
        // An updater that stopped is restarted (on a root of its own: the next failure is the next record's own).
        if (why !== undefined || all[format].records >= RECORDS_PER_MEMORY) {
          await all[format].updater.stop().catch(() => {});
          all[format] = await bed(format);
        }
      }
    }
  } finally {
    for (const b of Object.values(all)) await b.updater.stop().catch(() => {});
  }
  assert.deepEqual(failures, []);
  if (process.env.CUILINK_FUZZ_SEED === undefined) assert.deepEqual([...seen.keys()].sort(), ['NoteEvent base note', 'NoteEvent mutant', ...[...mutationNames('GoldMention'), 'confluent'].map((m) => `GoldMention ${m}`)].sort());
});
