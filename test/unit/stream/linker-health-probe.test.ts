import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CuilinkError } from '../../../src/kb/errors.ts';
import { buildIndex } from '../../../src/retrieve/index-builder.ts';
import { LinkIndex } from '../../../src/retrieve/link-index.ts';
import { CandidateRetriever } from '../../../src/retrieve/candidate-retriever.ts';
import { Reranker } from '../../../src/rerank/reranker.ts';
import { Linker } from '../../../src/link/linker.ts';
import { parseLinkConfig } from '../../../src/link/link-config.ts';
import type { LinkingCore, NoteInput } from '../../../src/link/types.ts';
import { LinkerHealthProbe, linkerCheck, PROBE_NOTE } from '../../../src/stream/linker-health-probe.ts';
import { validateNote } from '../../../src/link/validate-note.ts';
import { createLogger } from '../../../src/telemetry/logger.ts';
import { FIXTURE_CONCEPTS } from '../../fixtures/link-concepts.ts';
import { TrigramEncoder, lowerNormalize } from '../../support/trigram-encoder.ts';
import type { NameEncoder } from '../../../src/retrieve/name-encoder.ts';

function logged() {
  const lines: { level: string; message: string; code?: string }[] = [];
  return { lines, logger: createLogger({ level: 'debug', sink: (l) => lines.push(JSON.parse(l) as (typeof lines)[number]) }) };
}

/** A check that does the next step each time it is called (the last one from then on). */
function scripted(...steps: ('ok' | 'fatal' | 'retriable' | 'hang')[]) {
  let i = 0;
  const check = async () => {
    const step = steps[Math.min(i++, steps.length - 1)];
    if (step === 'fatal') throw new CuilinkError('ENCODER_FAILED', 'encoder worker could not be kept running');
    if (step === 'retriable') throw new CuilinkError('ENCODER_RESTARTING', 'restarting', { retriable: true });
    if (step === 'hang') await sleep(1000); // far past the probe's timeout
  };
  return { check, calls: () => i };
}

test('an encoder that gave up is seen without any note: unhealthy at the first failed probe, logged once at error level, reported to onChange', async () => {
  const { lines, logger } = logged();
  const { check } = scripted('ok', 'fatal');
  const probe = new LinkerHealthProbe({ check, logger, intervalMs: 60_000 });
  const changes: [boolean, string | undefined][] = [];
  probe.onChange((healthy, error) => changes.push([healthy, (error as CuilinkError | undefined)?.code]));
  assert.equal(await probe.probeNow(), true);
  assert.equal(await probe.probeNow(), false);
  assert.equal(probe.healthy, false);
  assert.equal((probe.error as CuilinkError).code, 'ENCODER_FAILED');
  await probe.probeNow();
  await probe.probeNow();
  const errors = lines.filter((l) => l.level === 'error');
  assert.equal(errors.length, 1, 'one error line, not one per probe');
  assert.equal(errors[0]!.message, 'linker health probe failed: linker unhealthy');
  assert.equal(errors[0]!.code, 'ENCODER_FAILED');
  assert.deepEqual(changes, [[false, 'ENCODER_FAILED']]);
});

test('retriable failures and timeouts count as unhealthy only after maxTransientFailures in a row; a success resets the count and heals', async () => {
  const { lines, logger } = logged();
  const { check } = scripted('retriable', 'retriable', 'ok', 'retriable', 'hang', 'retriable', 'ok');
  const probe = new LinkerHealthProbe({ check, logger, timeoutMs: 20, maxTransientFailures: 3 });
  const changes: boolean[] = [];
  probe.onChange((healthy) => changes.push(healthy));
  assert.equal(await probe.probeNow(), true);
  assert.equal(await probe.probeNow(), true);
  assert.equal(await probe.probeNow(), true, 'ok: the count starts again');
  assert.equal(await probe.probeNow(), true);
  assert.equal(await probe.probeNow(), true, 'a timeout is a transient failure');
  assert.equal(await probe.probeNow(), false, 'the third in a row');
  assert.equal((probe.error as { code?: string }).code, 'ENCODER_RESTARTING');
  assert.equal(await probe.probeNow(), true, 'healthy again');
  assert.equal(probe.error, undefined);
  assert.deepEqual(changes, [false, true]);
  assert.equal(lines.filter((l) => l.level === 'warn').length, 4);
  assert.equal(lines.filter((l) => l.level === 'error').length, 1);
  assert.equal(lines.filter((l) => l.message.includes('answers again')).length, 1);
});

test('start() probes at once and then every intervalMs, never two at a time; stop() ends it', async () => {
  const { logger } = logged();
  let running = 0;
  let most = 0;
  let calls = 0;
  const probe = new LinkerHealthProbe({
    logger, intervalMs: 10,
    check: async () => {
      calls++;
      most = Math.max(most, ++running);
      await sleep(35);
      running--;
    },
  });
  probe.start();
  probe.start();
  await sleep(200);
  probe.stop();
  const seen = calls;
  assert.ok(seen >= 3 && seen <= 7, `${seen} probes of 35 ms in 200 ms`);
  assert.equal(most, 1, 'no overlapping probes');
  await sleep(100);
  assert.equal(calls, seen, 'no probe after stop()');
});

test('a check that throws synchronously is a failed probe, not a crash', async () => {
  const { logger } = logged();
  const probe = new LinkerHealthProbe({ logger, check: () => { throw new TypeError('bug'); } });
  assert.equal(await probe.probeNow(), false);
  assert.ok(probe.error instanceof TypeError);
});

let root: string;
let index: LinkIndex;
const encoder = new TrigramEncoder();

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'cuilink-probe-'));
  await buildIndex({
    concepts: FIXTURE_CONCEPTS, kbSources: ['fixture'], kbChecksum: 'c'.repeat(64), encoder,
    model: { path: 'm', sha256: 'd'.repeat(64), precision: 'fp32' }, normalize: lowerNormalize, outDir: join(root, 'idx'), progress: false,
  });
  index = await LinkIndex.open(join(root, 'idx'), lowerNormalize);
});
after(() => rmSync(root, { recursive: true, force: true }));

function linker(scorer?: { modelId: string; score: (pairs: { query: string; candidate: string }[]) => Promise<Float32Array> }, enc: NameEncoder = encoder): Linker {
  return new Linker({
    index, retriever: new CandidateRetriever(index), encoder: enc,
    reranker: scorer ? new Reranker(scorer, { includeSemanticType: false }) : undefined,
    biEncoderQuery: (_text, m, override) => override ?? m.text,
    rerankQuery: (_text, m, override) => `[M] ${override ?? m.text} [/M]`,
    findAbbreviations: () => new Map(),
    config: parseLinkConfig({}),
    versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: index.manifest.indexVersion },
    release: async () => {},
  });
}

test('Linker.probe runs the bi-encoder and the cross-encoder once each, and fails with their error', async () => {
  let scored = 0;
  const scorer = { modelId: 's', score: async (pairs: unknown[]) => { scored++; return new Float32Array(pairs.length); } };
  const before = encoder.calls;
  const real = linker(scorer);
  const { logger } = logged();
  const probe = new LinkerHealthProbe({ check: linkerCheck(real), logger });
  assert.equal(await probe.probeNow(), true);
  assert.equal(encoder.calls - before, 1);
  assert.equal(scored, 1);

  const failing = { dims: encoder.dims, modelId: 'broken', encode: async () => { throw new CuilinkError('INFERENCE_FAILED', 'inference failed: Reshape'); } };
  const broken = new LinkerHealthProbe({ check: linkerCheck(linker(undefined, failing)), logger });
  assert.equal(await broken.probeNow(), false);
  assert.equal((broken.error as CuilinkError).code, 'INFERENCE_FAILED');
});

test('a core without probe() is probed through linkNotes with a valid one-mention note', async () => {
  const seen: NoteInput[][] = [];
  const core: LinkingCore = {
    versions: { linkerVersion: 't', modelVersion: 'm', indexVersion: 'i' },
    linkNotes: async (notes) => {
      seen.push(notes);
      return [];
    },
    close: async () => {},
  };
  await linkerCheck(core)();
  assert.deepEqual(seen, [[PROBE_NOTE]]);
  assert.doesNotThrow(() => validateNote(PROBE_NOTE));
});
