import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../../src/kb/errors.ts';
import { buildIndexFromKb } from '../../../src/link/build-index-from-kb.ts';
import { DEFAULT_MODEL_DIR } from '../../../src/link/default-index.ts';
import { DEFAULT_CALIBRATION, openLinker } from '../../../src/link/open-linker.ts';

// The shipped calibration with the real models over a fixture index: confidence is a probability,
// NIL follows it, and a calibration for other models is refused or (the default) left out, said so.
let dir: string;
const note = { noteId: 'n1', text: 'Breast cancer and a purple spoon.', mentions: [{ id: 'm1', start: 0, end: 13, text: 'Breast cancer', label: 'Disease' }, { id: 'm2', start: 20, end: 32, text: 'purple spoon', label: 'Disease' }] };

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cuilink-calibration-'));
  await buildIndexFromKb({ kbPaths: [join('test', 'fixtures', 'kb', 'ctd-tiny.tsv')], modelDir: DEFAULT_MODEL_DIR, provider: 'cpu', outDir: join(dir, 'idx'), progress: false, log: () => {} });
});

after(() => rmSync(dir, { recursive: true, force: true }));

test('the shipped calibration gives every link a probability; NIL is a confidence under nil.confidence, candidates kept', async () => {
  const linker = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', log: () => {} });
  const strict = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', log: () => {}, config: { nil: { confidence: 0.99 } } });
  try {
    const [linked] = await linker.linkNotes([note]);
    for (const m of linked!.mentions) assert.ok(m.confidence !== null && m.confidence > 0 && m.confidence < 1, `${m.mentionId}: ${m.confidence}`);
    const [all] = await strict.linkNotes([note]);
    for (const m of all!.mentions) {
      assert.equal(m.nil, m.confidence! < 0.99);
      if (m.nil) assert.deepEqual([m.conceptId, m.conceptName, m.candidates.length > 0], [null, null, true], 'a NIL link keeps its candidates');
    }
    assert.ok(all!.mentions.some((m) => m.nil), 'a bar of 0.99 NILs something');
  } finally {
    await linker.close();
    await strict.close();
  }
});

test('a calibration fit for other models is an error when asked for, and the default is left out with a log line when it does not fit', async () => {
  const other = JSON.parse(readFileSync(DEFAULT_CALIBRATION, 'utf8')) as { models: { biEncoder: string } };
  other.models.biEncoder = 'f'.repeat(64);
  const file = join(dir, 'other.json');
  writeFileSync(file, JSON.stringify(other));
  await assert.rejects(openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', log: () => {}, calibration: file }), (e: unknown) => e instanceof InputError && e.code === 'CALIBRATION_MISMATCH' && /bi-encoder ffffffffffff/.test(e.message));
  const lines: string[] = [];
  const noReranker = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', rerankerDir: false, log: (line) => lines.push(line) });
  try {
    assert.ok(lines.some((l) => /^confidence: none \(the shipped calibration does not fit these models: it was fit for cross-encoder [0-9a-f]{12}, the linker loaded none/.test(l)), lines.join('\n'));
    const [linked] = await noReranker.linkNotes([note]);
    assert.ok(linked!.mentions.every((m) => m.confidence === null), 'no calibration, no confidence');
  } finally {
    await noReranker.close();
  }
});

test('an opt-in cross-encoder brings its own calibration: used when the shipped default does not fit, never when it does', async () => {
  // The context cross-encoder ships models/default/crossencoder-context/calibration.json, fit for it.
  const rerankerDir = join('models', 'default', 'crossencoder-context');
  const lines: string[] = [];
  const linker = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', rerankerDir, log: (line) => lines.push(line) });
  try {
    const [linked] = await linker.linkNotes([note]);
    for (const m of linked!.mentions) assert.ok(m.confidence !== null && m.confidence > 0 && m.confidence < 1, `${m.mentionId}: ${m.confidence}`);
    assert.ok(!lines.some((l) => l.startsWith('confidence: none')), lines.join('\n'));
  } finally {
    await linker.close();
  }
  // Beside a reranker it was not fit for (a copy of the default's files under another directory), it is left out, said so.
  const copy = join(dir, 'reranker-copy');
  cpSync(rerankerDir, copy, { recursive: true });
  const other = JSON.parse(readFileSync(join(copy, 'calibration.json'), 'utf8')) as { models: { crossEncoder: string } };
  other.models.crossEncoder = 'e'.repeat(64);
  writeFileSync(join(copy, 'calibration.json'), JSON.stringify(other));
  const logged: string[] = [];
  const mismatched = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', rerankerDir: copy, log: (line) => logged.push(line) });
  try {
    const [linked] = await mismatched.linkNotes([note]);
    assert.ok(linked!.mentions.every((m) => m.confidence === null));
    assert.ok(logged.some((l) => l.startsWith('confidence: none (the shipped calibration does not fit these models')), logged.join('\n'));
  } finally {
    await mismatched.close();
  }
});

test('a calibration brings its own NIL threshold; a link config that names nil.confidence overrides it', async () => {
  const shipped = JSON.parse(readFileSync(DEFAULT_CALIBRATION, 'utf8')) as { nilConfidence?: number };
  assert.equal(typeof shipped.nilConfidence, 'number', 'the shipped calibration records the threshold chosen for it');
  const withThreshold = (value: number) => {
    const file = join(dir, `calibration-nil-${value}.json`);
    writeFileSync(file, JSON.stringify({ ...shipped, nilConfidence: value }));
    return file;
  };
  const own = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', log: () => {}, calibration: withThreshold(0.99) });
  const overridden = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', log: () => {}, calibration: withThreshold(0.99), config: { nil: { confidence: 0, inKb: 0 } } });
  const shippedLinker = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', log: () => {} });
  try {
    assert.equal(own.config?.nil.confidence, 0.99);
    assert.equal(overridden.config?.nil.confidence, 0);
    assert.equal(shippedLinker.config?.nil.confidence, shipped.nilConfidence);
    const [strict] = await own.linkNotes([note]);
    const [lenient] = await overridden.linkNotes([note]);
    assert.ok(strict!.mentions.every((m) => m.nil === m.confidence! < 0.99) && strict!.mentions.some((m) => m.nil), 'the file\'s 0.99 NILs something');
    assert.ok(lenient!.mentions.every((m) => !m.nil), 'nil.confidence and nil.inKb 0 from the link config: nothing is NIL');
  } finally {
    await own.close();
    await overridden.close();
    await shippedLinker.close();
  }
});

test('NIL is P(in KB) under nil.inKb: the shipped file records its threshold (and none on confidence); a link config overrides it', async () => {
  const shipped = JSON.parse(readFileSync(DEFAULT_CALIBRATION, 'utf8')) as { nilConfidence?: number; nilInKb?: number };
  assert.ok(typeof shipped.nilInKb === 'number' && shipped.nilInKb > 0 && shipped.nilInKb < 1, `the shipped file decides NIL on P(in KB): ${shipped.nilInKb}`);
  assert.equal(shipped.nilConfidence, 0);
  const linker = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', log: () => {} });
  const strict = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', log: () => {}, config: { nil: { inKb: 0.999 } } });
  try {
    assert.deepEqual(linker.config?.nil, { threshold: 0, confidence: 0, inKb: shipped.nilInKb });
    const [linked] = await linker.linkNotes([note]);
    for (const m of linked!.mentions) {
      assert.ok(m.inKb != null && m.inKb > 0 && m.inKb <= 1, `${m.mentionId}: P(in KB) ${m.inKb}`);
      assert.ok(m.confidence! <= m.inKb + 1e-12, 'confidence is P(right | in KB) · P(in KB)');
      assert.equal(m.nil, m.inKb < shipped.nilInKb!);
    }
    const [all] = await strict.linkNotes([note]);
    assert.equal(strict.config?.nil.inKb, 0.999);
    for (const m of all!.mentions) assert.equal(m.nil, m.inKb! < 0.999, `${m.mentionId}: P(in KB) ${m.inKb}`);
    assert.ok(all!.mentions.some((m) => m.nil), 'a bar of 0.999 on P(in KB) NILs something');
  } finally {
    await linker.close();
    await strict.close();
  }
});

test('mentions encoded at another precision than the index\'s name vectors are said so at start', async () => {
  const logs: string[] = [];
  const fp16 = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', precision: 'fp16', log: (l) => logs.push(l) });
  await fp16.close();
  assert.ok(logs.some((l) => /holds int8 name vectors; mentions are encoded fp16 here \(--precision int8 matches them/.test(l)), logs.join('\n'));
  const same: string[] = [];
  const int8 = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', log: (l) => same.push(l) });
  await int8.close();
  assert.ok(!same.some((l) => /name vectors; mentions are encoded/.test(l)), same.join('\n'));
});

test('a calibration that records the link config it was fit under says so at start when the linker runs another', async () => {
  const { fittedLinkConfig, linkConfigDifferences } = await import('../../../src/link/fitted-link-config.ts');
  const { parseLinkConfig } = await import('../../../src/link/link-config.ts');
  assert.deepEqual(linkConfigDifferences(fittedLinkConfig(parseLinkConfig({})), parseLinkConfig({ nil: { inKb: 0.9 } })), [], 'NIL thresholds travel with the file: no difference');
  assert.deepEqual(linkConfigDifferences(fittedLinkConfig(parseLinkConfig({})), parseLinkConfig({ rerank: { weight: 0.5 }, topK: 7 })), ['rerank.weight', 'topK']);
  const fitted = JSON.parse(readFileSync(DEFAULT_CALIBRATION, 'utf8')) as { fit: Record<string, unknown> };
  fitted.fit.linkConfig = fittedLinkConfig(parseLinkConfig({}));
  const file = join(dir, 'with-config.json');
  writeFileSync(file, JSON.stringify(fitted));
  for (const [config, warned] of [[undefined, false], [{ rerank: { weight: 0.5 } }, true]] as const) {
    const lines: string[] = [];
    const linker = await openLinker({ indexDir: join(dir, 'idx'), provider: 'cpu', calibration: file, config, log: (l) => lines.push(l) });
    await linker.close();
    assert.equal(lines.some((l) => /^confidence: the calibration was fit under another link config \(rerank\.weight\)/.test(l)), warned, lines.join('\n'));
  }
});
