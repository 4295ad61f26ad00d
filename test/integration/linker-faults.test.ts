import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { BiEncoder } from '../../src/encode/bi-encoder.ts';
import { OnnxSession } from '../../src/encode/onnx-session.ts';
import type { CuilinkError } from '../../src/kb/errors.ts';
import { DEFAULT_MODEL_DIR } from '../../src/link/default-index.ts';
import { parseLinkConfig } from '../../src/link/link-config.ts';
import { Linker } from '../../src/link/linker.ts';
import { CandidateRetriever } from '../../src/retrieve/candidate-retriever.ts';
import { buildIndex } from '../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../src/retrieve/link-index.ts';
import { LinkerHealthProbe, linkerCheck } from '../../src/stream/linker-health-probe.ts';
import { NoteBatchLinker, type NoteOutcome } from '../../src/stream/note-batch-linker.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { StageMetrics } from '../../src/telemetry/stage-metrics.ts';
import { FIXTURE_CONCEPTS } from '../fixtures/link-concepts.ts';
import { writeBrokenBiEncoder } from '../support/broken-model.ts';
import { syntheticNotes } from '../support/stream-fixtures.ts';
import { TrigramEncoder, lowerNormalize } from '../support/trigram-encoder.ts';

// Issue #27 with real ONNX sessions in worker threads (no stand-in for the encoder): a model that
// throws on every call (a broken ONNX file behind a valid manifest) is never taken for bad input,
// and an encoder that gave up after its restarts is seen by the health probe on an idle stream.

let root: string;
let index: LinkIndex;

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-linker-faults-'));
  // The index only serves retrieval, which these faults never reach: a stand-in encoder builds it.
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder: new TrigramEncoder(),
    model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false,
  });
  index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
});

after(() => rmSync(root, { recursive: true, force: true }));

function linkerOver(encoder: BiEncoder): Linker {
  return new Linker({
    index, retriever: new CandidateRetriever(index), encoder,
    biEncoderQuery: (_text, m) => m.text,
    rerankQuery: (_text, m) => m.text,
    findAbbreviations: () => new Map(),
    config: parseLinkConfig({}),
    versions: { linkerVersion: 't', modelVersion: encoder.modelId, indexVersion: index.manifest.indexVersion },
    release: () => encoder.close(),
  });
}

function logged() {
  const lines: { level: string; message: string; code?: string; noteId?: string }[] = [];
  return { lines, logger: createLogger({ level: 'debug', sink: (l) => lines.push(JSON.parse(l) as (typeof lines)[number]) }) };
}

test('a model that throws on every call: no note is dead-lettered, the linker reports a fatal INFERENCE_FAILED, the probe says unhealthy', async () => {
  const encoder = await BiEncoder.open(writeBrokenBiEncoder(join(root, 'broken')), { provider: 'cpu', threads: 1, log: () => {} });
  const linker = linkerOver(encoder);
  const { lines, logger } = logged();
  try {
    const batch = new NoteBatchLinker(linker, trace.getTracer('test'), new StageMetrics(() => 0), { maxAttempts: 2, initialBackoffMs: 1, maxBackoffMs: 2 }, logger);
    const fatal: unknown[] = [];
    batch.onFatal((error) => fatal.push(error));
    const notes = syntheticNotes(4, 'broken-model').map((note) => ({ note, mentionCount: note.mentions.length }));
    let outcomes: NoteOutcome[] | undefined;
    const error = await batch.link(notes).then((o) => (outcomes = o), (e: unknown) => e);
    assert.equal(outcomes, undefined, 'no outcome at all, so no dead letter and no commit');
    assert.equal((error as CuilinkError).code, 'INFERENCE_FAILED');
    assert.equal((fatal[0] as CuilinkError | undefined)?.code, 'INFERENCE_FAILED', 'reported as fatal: the stage exits non-zero');
    assert.equal(batch.available, false, 'unready');
    assert.ok(lines.some((l) => l.level === 'error' && l.code === 'INFERENCE_FAILED'));

    // On an idle stream the probe finds it without any note.
    const probe = new LinkerHealthProbe({ check: linkerCheck(linker), logger });
    assert.equal(await probe.probeNow(), false);
    assert.equal((probe.error as CuilinkError).code, 'INFERENCE_FAILED');
  } finally {
    await linker.close();
  }
});

test('an encoder that gave up after its restarts on an idle stream: the probe turns unhealthy with ENCODER_FAILED and logs it once', async () => {
  const modelDir = join(root, 'model-copy');
  cpSync(DEFAULT_MODEL_DIR, modelDir, { recursive: true });
  const encoder = await BiEncoder.open(modelDir, { provider: 'cpu', threads: 1, log: () => {} });
  const linker = linkerOver(encoder);
  const { lines, logger } = logged();
  const probe = new LinkerHealthProbe({ check: linkerCheck(linker), logger });
  try {
    assert.equal(await probe.probeNow(), true, 'a working encoder answers the probe');
    // The model file disappears, then the worker dies: every restart fails, and no note comes.
    for (const file of readdirSync(modelDir).filter((f) => f.endsWith('.onnx'))) rmSync(join(modelDir, file));
    const session = OnnxSession.openSessions().at(-1)!;
    const gaveUp = new Promise<Error>((resolve) => session.onFailed(resolve));
    await session.killWorker();
    assert.equal((await gaveUp).message.includes('could not be kept running'), true);
    assert.equal(await probe.probeNow(), false);
    assert.equal((probe.error as CuilinkError).code, 'ENCODER_FAILED');
    await probe.probeNow();
    const errors = lines.filter((l) => l.level === 'error');
    assert.equal(errors.length, 1, 'logged once');
    assert.equal(errors[0]!.code, 'ENCODER_FAILED');
  } finally {
    probe.stop();
    await linker.close();
  }
});
