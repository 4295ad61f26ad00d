import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CALIBRATION_FORMAT, CALIBRATION_FORMAT_V1, ConfidenceCalibrator } from '../../../src/link/confidence-calibrator.ts';
import { CONFIDENCE_FEATURES, confidenceFeatures, type ConfidenceFeatureName } from '../../../src/link/confidence-features.ts';
import type { Candidate, LinkedMention } from '../../../src/link/types.ts';
import { InputError } from '../../../src/kb/errors.ts';

const BI = 'a'.repeat(64);
const CROSS = 'c'.repeat(64);
const OTHER = '0123456789abcdef'.repeat(4);
const n = CONFIDENCE_FEATURES.length;

/** A format-1 file: logistic parts, their fields at the top level. */
function calibration(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    format: CALIBRATION_FORMAT_V1,
    version: 'test-calibration',
    features: [...CONFIDENCE_FEATURES],
    mean: Array.from({ length: n }, (_, i) => i / 10),
    scale: Array.from({ length: n }, (_, i) => 0.5 + i / 20),
    weights: Array.from({ length: n }, (_, i) => (i % 3 === 0 ? 0.3 : i % 3 === 1 ? -0.2 : 0.05 * i)),
    bias: -0.4,
    models: { biEncoder: BI, crossEncoder: CROSS },
    fit: { examples: 100 },
    ...overrides,
  };
}

function withDir<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-calibration-'));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function writeJson(dir: string, name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(value, null, 2));
  return path;
}

const badCalibration = (error: unknown) => error instanceof InputError && error.code === 'BAD_CALIBRATION';

test('a valid calibration file loads; its sha256 is that of its bytes', () => {
  withDir((dir) => {
    const path = writeJson(dir, 'calibration.json', calibration());
    const bytes = Buffer.from(JSON.stringify(calibration(), null, 2));
    const calibrator = ConfidenceCalibrator.load(path);
    assert.equal(calibrator.sha256, createHash('sha256').update(bytes).digest('hex'));
    assert.equal(calibrator.path, path);
    assert.equal(calibrator.file.version, 'test-calibration');
    assert.deepEqual(calibrator.file.features, [...CONFIDENCE_FEATURES]);
    // Another byte layout of the same content: another checksum.
    const compact = join(dir, 'compact.json');
    writeFileSync(compact, JSON.stringify(calibration()));
    assert.notEqual(ConfidenceCalibrator.load(compact).sha256, calibrator.sha256);
  });
});

test('probability is the logistic of bias + Σ w·(x − mean)/scale', () => {
  withDir((dir) => {
    const file = calibration();
    const calibrator = ConfidenceCalibrator.load(writeJson(dir, 'calibration.json', file));
    const mean = file.mean as number[];
    const scale = file.scale as number[];
    const weights = file.weights as number[];
    for (const features of [
      Array.from({ length: n }, (_, i) => (i * 7) % 5 / 4),
      Array.from({ length: n }, () => 0),
      [...mean],
    ]) {
      let z = file.bias as number;
      for (let i = 0; i < n; i++) z += (weights[i]! * (features[i]! - mean[i]!)) / scale[i]!;
      const expected = 1 / (1 + Math.exp(-z));
      const actual = calibrator.probability(Float64Array.from(features));
      assert.ok(Math.abs(actual - expected) < 1e-12, `${actual} ≠ ${expected}`);
    }
    // At the mean only the bias counts.
    assert.ok(Math.abs(calibrator.probability(mean) - 1 / (1 + Math.exp(0.4))) < 1e-12);
  });
});

test('a bad calibration file is refused with BAD_CALIBRATION', () => {
  withDir((dir) => {
    const { weights: _weights, ...noWeights } = calibration();
    const notJson = join(dir, 'not-json.json');
    writeFileSync(notJson, '{"format": "cuilink-calibration/1",');
    const cases: [string, string][] = [
      ['missing file', join(dir, 'absent.json')],
      ['not JSON', notJson],
      ['unknown format', writeJson(dir, 'format.json', calibration({ format: 'cuilink-calibration/9' }))],
      ['format 2 with format-1 fields', writeJson(dir, 'format-2-flat.json', calibration({ format: CALIBRATION_FORMAT }))],
      ['no weights', writeJson(dir, 'no-weights.json', noWeights)],
      ['a feature dropped', writeJson(dir, 'dropped.json', calibration({ features: CONFIDENCE_FEATURES.slice(0, -1) }))],
      ['features reordered', writeJson(dir, 'reordered.json', calibration({ features: [CONFIDENCE_FEATURES[1], CONFIDENCE_FEATURES[0], ...CONFIDENCE_FEATURES.slice(2)] }))],
      ['weights of the wrong length', writeJson(dir, 'short-weights.json', calibration({ weights: Array.from({ length: n - 1 }, () => 0.1) }))],
      ['mean of the wrong length', writeJson(dir, 'long-mean.json', calibration({ mean: Array.from({ length: n + 1 }, () => 0) }))],
      ['a zero scale', writeJson(dir, 'zero-scale.json', calibration({ scale: Array.from({ length: n }, (_, i) => (i === 3 ? 0 : 1)) }))],
      ['an unknown extra key', writeJson(dir, 'extra.json', calibration({ temperature: 1.5 }))],
      ['a negative NIL threshold', writeJson(dir, 'nil-threshold.json', calibration({ nilConfidence: -0.1 }))],
      ['an unknown key in models', writeJson(dir, 'extra-models.json', calibration({ models: { biEncoder: BI, crossEncoder: null, tokenizer: BI } }))],
      ['a bi-encoder that is not a sha256', writeJson(dir, 'bad-sha.json', calibration({ models: { biEncoder: 'abc', crossEncoder: null } }))],
    ];
    for (const [name, path] of cases) assert.throws(() => ConfidenceCalibrator.load(path), badCalibration, name);
  });
});

test('a file fit on a leading run of the features (before features were appended) loads and reads only those', () => {
  withDir((dir) => {
    const k = n - 6;
    const short = calibration({ features: CONFIDENCE_FEATURES.slice(0, k), mean: Array(k).fill(0), scale: Array(k).fill(1), weights: Array.from({ length: k }, (_, i) => (i === 0 ? 2 : 0)), bias: -1 });
    const calibrator = ConfidenceCalibrator.load(writeJson(dir, 'leading.json', short));
    const x = new Float64Array(n).fill(5);
    x[0] = 1;
    assert.ok(Math.abs(calibrator.probability(x) - 1 / (1 + Math.exp(-1))) < 1e-12, 'the appended features (5) are not read');
    const unknown = calibration({ features: [...CONFIDENCE_FEATURES, 'from_the_future'], mean: Array(n + 1).fill(0), scale: Array(n + 1).fill(1), weights: Array(n + 1).fill(0) });
    assert.throws(() => ConfidenceCalibrator.load(writeJson(dir, 'unknown.json', unknown)), /from_the_future/);
    const empty = calibration({ features: [], mean: [], scale: [], weights: [] });
    assert.throws(() => ConfidenceCalibrator.load(writeJson(dir, 'empty.json', empty)), badCalibration);
  });
});

test('the error for an unknown key names it', () => {
  withDir((dir) => {
    const path = writeJson(dir, 'extra.json', calibration({ temperature: 1.5 }));
    assert.throws(() => ConfidenceCalibrator.load(path), /temperature/);
  });
});

test('mismatch names the model whose checksum differs, undefined when both match', () => {
  withDir((dir) => {
    const both = ConfidenceCalibrator.load(writeJson(dir, 'both.json', calibration()));
    assert.equal(both.mismatch({ biEncoder: BI, crossEncoder: CROSS }), undefined);
    const bi = both.mismatch({ biEncoder: OTHER, crossEncoder: CROSS });
    assert.ok(bi !== undefined && /bi-encoder/.test(bi) && !/cross-encoder/.test(bi), bi);
    assert.ok(bi.includes(BI.slice(0, 12)) && bi.includes(OTHER.slice(0, 12)), bi);
    const cross = both.mismatch({ biEncoder: BI, crossEncoder: OTHER });
    assert.ok(cross !== undefined && /cross-encoder/.test(cross), cross);
    assert.ok(cross.includes(CROSS.slice(0, 12)) && cross.includes(OTHER.slice(0, 12)), cross);
    // Fit with a cross-encoder, loaded without one.
    const none = both.mismatch({ biEncoder: BI, crossEncoder: null });
    assert.ok(none !== undefined && /cross-encoder/.test(none), none);

    const biOnly = ConfidenceCalibrator.load(writeJson(dir, 'bi-only.json', calibration({ models: { biEncoder: BI, crossEncoder: null } })));
    assert.equal(biOnly.mismatch({ biEncoder: BI, crossEncoder: null }), undefined);
    const added = biOnly.mismatch({ biEncoder: BI, crossEncoder: CROSS });
    assert.ok(added !== undefined && /cross-encoder/.test(added) && added.includes(CROSS.slice(0, 12)), added);
  });
});

const candidate = (over: Partial<Candidate> = {}): Candidate => ({
  conceptId: 'MESH:D020388',
  name: 'Muscular Dystrophy, Duchenne',
  semanticTypes: ['T047'],
  score: 1,
  retrievalScore: 1,
  exact: true,
  via: 'exact',
  ...over,
});

function linked(over: Partial<Omit<LinkedMention, 'confidence'>> = {}): Omit<LinkedMention, 'confidence'> {
  const candidates = over.candidates ?? [candidate(), candidate({ conceptId: 'MESH:D009136', name: 'Muscular Dystrophies', score: 0.7, retrievalScore: 0.75, exact: false, via: 'dense' })];
  return {
    mentionId: '0-27',
    start: 0,
    end: 27,
    label: 'Disease',
    conceptId: candidates[0]?.conceptId ?? null,
    conceptName: candidates[0]?.name ?? null,
    semanticTypes: candidates[0]?.semanticTypes ?? [],
    score: candidates[0]?.score ?? 0,
    via: 'exact',
    nil: candidates.length === 0,
    reranked: false,
    candidates,
    expandedFrom: null,
    memoryDecided: false,
    memorySupport: 0,
    ...over,
  };
}

const VIA_FEATURES: ConfidenceFeatureName[] = ['via_exact', 'via_abbreviation', 'via_loose', 'via_xref', 'via_rule', 'via_composite', 'via_dense', 'via_memory'];
const get = (x: Float64Array, name: ConfidenceFeatureName) => x[CONFIDENCE_FEATURES.indexOf(name)]!;
const viaVector = (x: Float64Array) => Object.fromEntries(VIA_FEATURES.map((f) => [f, get(x, f)]));
const onlyVia = (name: ConfidenceFeatureName) => Object.fromEntries(VIA_FEATURES.map((f) => [f, f === name ? 1 : 0]));

test('CONFIDENCE_FEATURES are distinct and confidenceFeatures returns one value each', () => {
  assert.equal(new Set(CONFIDENCE_FEATURES).size, CONFIDENCE_FEATURES.length);
  assert.equal(confidenceFeatures(linked(), 'Duchenne muscular dystrophy').length, CONFIDENCE_FEATURES.length);
});

test('the stage sets exactly one via_* feature', () => {
  const text = 'Duchenne muscular dystrophy';
  assert.deepEqual(viaVector(confidenceFeatures(linked({ via: 'exact' }), text)), onlyVia('via_exact'));
  assert.deepEqual(viaVector(confidenceFeatures(linked({ via: 'abbreviation' }), text)), onlyVia('via_abbreviation'));
  assert.deepEqual(viaVector(confidenceFeatures(linked({ via: 'loose' }), text)), onlyVia('via_loose'));
  assert.deepEqual(viaVector(confidenceFeatures(linked({ via: 'xref' }), text)), onlyVia('via_xref'));
  for (const rule of ['head-noun', 'inheritance', 'unqualified']) assert.deepEqual(viaVector(confidenceFeatures(linked({ via: rule }), text)), onlyVia('via_rule'), rule);
  assert.deepEqual(viaVector(confidenceFeatures(linked({ via: 'composite' }), text)), onlyVia('via_composite'));
  assert.deepEqual(viaVector(confidenceFeatures(linked({ via: 'dense' }), text)), onlyVia('via_dense'));
  assert.deepEqual(viaVector(confidenceFeatures(linked({ via: 'inventory' }), text)), onlyVia('via_dense'));
  assert.deepEqual(viaVector(confidenceFeatures(linked({ via: null }), text)), onlyVia('via_dense'), 'no via reads as dense');
  assert.deepEqual(viaVector(confidenceFeatures(linked({ via: 'memory' }), text)), onlyVia('via_memory'));
});

test('a link with no candidates has all-zero features', () => {
  const x = confidenceFeatures(linked({ candidates: [], via: 'exact', reranked: true, memorySupport: 3, expandedFrom: 'DMD' }), 'DMD');
  assert.deepEqual(Array.from(x), new Array<number>(n).fill(0));
});

test('scores, margins and similarity features come from the top candidates', () => {
  const candidates = [
    candidate({ score: 0.82, retrievalScore: 0.9, exact: false, via: 'dense' }),
    candidate({ conceptId: 'B', name: 'Becker muscular dystrophy', score: 0.61, retrievalScore: 0.7, exact: false, via: 'dense' }),
    candidate({ conceptId: 'C', name: 'Myopathy', score: 0.4, retrievalScore: 0.85, exact: false, via: 'dense' }),
  ];
  const x = confidenceFeatures(linked({ candidates, via: 'dense', reranked: true, memorySupport: 4 }), 'Duchenne muscular dystrophy');
  assert.ok(Math.abs(get(x, 'score') - 0.82) < 1e-12);
  assert.ok(Math.abs(get(x, 'score_margin') - (0.82 - 0.61)) < 1e-12);
  assert.ok(Math.abs(get(x, 'dense_margin') - (0.82 - 0.61)) < 1e-12);
  assert.ok(Math.abs(get(x, 'similarity') - 0.9) < 1e-12);
  assert.ok(Math.abs(get(x, 'dense_similarity') - 0.9) < 1e-12);
  assert.ok(Math.abs(get(x, 'dense_similarity_sq') - 0.81) < 1e-12);
  assert.equal(get(x, 'lookup_similarity'), 0);
  // Lead over the best other similarity (0.85, the third candidate's), not the second's.
  assert.ok(Math.abs(get(x, 'similarity_lead') - 0.05) < 1e-12);
  assert.equal(get(x, 'reranked'), 1);
  assert.ok(Math.abs(get(x, 'memory_support') - Math.log(5)) < 1e-12);
  assert.ok(Math.abs(get(x, 'log_length') - Math.log('Duchenne muscular dystrophy'.length)) < 1e-12);
  assert.equal(get(x, 'words'), 3);
  assert.equal(get(x, 'short_form'), 0);
  // "duch", "musc", "dyst" all in "Muscular Dystrophy, Duchenne".
  assert.equal(get(x, 'name_overlap'), 1);
  assert.equal(get(x, 'dense_overlap'), 1);
  assert.equal(get(x, 'lexical_ties'), 0);
});

test('a single candidate has margin and lead 1; lexical ties count the other name matches', () => {
  const single = confidenceFeatures(linked({ candidates: [candidate()], via: 'exact' }), 'Duchenne muscular dystrophy');
  assert.equal(get(single, 'score_margin'), 1);
  assert.equal(get(single, 'similarity_lead'), 1);
  const tied = [candidate(), candidate({ conceptId: 'B', via: 'exact' }), candidate({ conceptId: 'C', via: 'loose' }), candidate({ conceptId: 'D', via: 'dense', score: 0.5 })];
  const x = confidenceFeatures(linked({ candidates: tied, via: 'exact' }), 'Duchenne muscular dystrophy');
  assert.equal(get(x, 'lexical_ties'), 2);
  assert.equal(get(x, 'score_margin'), 0);
  assert.equal(get(x, 'dense_margin'), 0, 'dense_margin only for dense links');
  assert.equal(get(x, 'lookup_similarity'), 0, 'lookup_similarity never for exact');
  const loose = confidenceFeatures(linked({ candidates: [candidate({ via: 'loose', retrievalScore: 0.93 })], via: 'loose' }), 'Duchenne muscular dystrophies');
  assert.ok(Math.abs(get(loose, 'lookup_similarity') - 0.93) < 1e-12);
});

test('a short form sets short_form; so does an expanded abbreviation', () => {
  assert.equal(get(confidenceFeatures(linked(), 'DMD'), 'short_form'), 1);
  assert.equal(get(confidenceFeatures(linked(), 'dystrophy'), 'short_form'), 0);
  assert.equal(get(confidenceFeatures(linked({ expandedFrom: 'DMD', via: 'abbreviation' }), 'Duchenne muscular dystrophy'), 'short_form'), 1);
  const words = get(confidenceFeatures(linked(), 'a b c d e f g h'), 'words');
  assert.equal(words, 6, 'words are capped at 6');
});

test('every feature is finite, even for a lookup hit whose similarity is NaN', () => {
  const candidates = [candidate({ retrievalScore: NaN, via: 'head-noun', exact: false }), candidate({ conceptId: 'B', retrievalScore: NaN, score: 0.9, via: 'dense' })];
  for (const [link, text] of [
    [linked({ candidates, via: 'head-noun' }), 'von Hippel-Lindau'],
    [linked(), 'DMD'],
    [linked({ via: 'dense', memorySupport: 1e6 }), ''],
  ] as const) {
    const x = confidenceFeatures(link, text);
    assert.ok(Array.from(x).every(Number.isFinite), `${Array.from(x)}`);
  }
  const x = confidenceFeatures(linked({ candidates, via: 'head-noun' }), 'von Hippel-Lindau');
  assert.equal(get(x, 'similarity'), 0);
  assert.equal(get(x, 'via_rule'), 1);
});

test('with a NIL part, confidence is P(right | in KB) · P(in KB), the NIL odds moved from the fitted to the assumed prevalence', () => {
  withDir((dir) => {
    const zeros = Array.from({ length: n }, () => 0);
    const ones = Array.from({ length: n }, () => 1);
    const nilPart = { mean: zeros, scale: ones, weights: Array.from({ length: n }, (_, i) => (i === 0 ? 2 : 0)), bias: -1, trainedPrevalence: 0.1, assumedPrevalence: 0.05 };
    const base = calibration({ mean: zeros, scale: ones, weights: zeros, bias: 1 });
    const right = 1 / (1 + Math.exp(-1));
    const plain = ConfidenceCalibrator.load(writeJson(dir, 'plain.json', base));
    const withNil = ConfidenceCalibrator.load(writeJson(dir, 'nil.json', { ...base, nil: nilPart }));
    const x = Float64Array.from({ length: n }, (_, i) => (i === 0 ? 1.5 : 0));
    assert.ok(Math.abs(plain.probability(x) - right) < 1e-12);
    const shift = Math.log(0.05 / 0.95) - Math.log(0.1 / 0.9);
    const absent = 1 / (1 + Math.exp(-(-1 + 2 * 1.5 + shift)));
    assert.ok(Math.abs(withNil.probability(x) - right * (1 - absent)) < 1e-12);
    assert.ok(withNil.probability(x) < plain.probability(x), 'a likely-absent concept lowers the confidence');
    assert.ok(Math.abs(withNil.inKbProbability(x) - (1 - absent)) < 1e-12, 'P(in KB) is the NIL part\'s complement at the assumed prevalence');
    assert.deepEqual(withNil.assess(x), { confidence: withNil.probability(x), inKb: withNil.inKbProbability(x) });
    assert.equal(plain.inKbProbability(x), 1, 'without a NIL part every concept is taken to be in the KB');
    // Format 2 records the thresholds chosen for the file, the one on P(in KB) included.
    const { trainedPrevalence, assumedPrevalence, ...nilModel } = nilPart;
    const v2 = calibrationV2({ kind: 'logistic', mean: zeros, scale: ones, weights: zeros, bias: 1 }, { model: { kind: 'logistic', ...nilModel }, trainedPrevalence, assumedPrevalence });
    const thresholds = ConfidenceCalibrator.load(writeJson(dir, 'thresholds.json', { ...v2, nilInKb: 0.6, nilConfidence: 0 }));
    assert.deepEqual([thresholds.file.nilInKb, thresholds.file.nilConfidence], [0.6, 0]);
    assert.deepEqual(thresholds.assess(x), withNil.assess(x), 'the same parts in format 2 read the same');
    assert.throws(() => ConfidenceCalibrator.load(writeJson(dir, 'bad-threshold.json', { ...v2, nilInKb: 1.5 })), badCalibration);
    const atTrained = ConfidenceCalibrator.load(writeJson(dir, 'same.json', { ...base, nil: { ...nilPart, assumedPrevalence: 0.1 } }));
    assert.ok(Math.abs(atTrained.probability(x) - right * (1 - 1 / (1 + Math.exp(-2)))) < 1e-12, 'no shift at the fitted prevalence');
    for (const bad of [{ ...nilPart, weights: [1] }, { ...nilPart, assumedPrevalence: 0 }, { ...nilPart, trainedPrevalence: 1 }, { ...nilPart, extra: 1 }]) {
      assert.throws(() => ConfidenceCalibrator.load(writeJson(dir, 'bad.json', { ...base, nil: bad })), badCalibration);
    }
  });
});

/** A format-2 file: each part names its model. */
function calibrationV2(right: unknown, nil?: unknown): Record<string, unknown> {
  return { format: CALIBRATION_FORMAT, version: 'test-trees', features: [...CONFIDENCE_FEATURES], right, ...(nil ? { nil } : {}), models: { biEncoder: BI, crossEncoder: CROSS }, fit: {} };
}

const split = (feature: number, threshold: number, below: unknown, above: unknown) => ({ feature, threshold, below, above });

test('format 2 with boosted trees: logit = base + rate · Σ leaf, each split sending x ≤ threshold below', () => {
  withDir((dir) => {
    const right = { kind: 'trees', base: 0.5, rate: 0.1, trees: [split(0, 1, { leaf: -2 }, split(2, 0.5, { leaf: 1 }, { leaf: 3 })), { leaf: 0.7 }] };
    const nilModel = { kind: 'trees', base: -1, rate: 0.5, trees: [split(1, 0, { leaf: -1 }, { leaf: 2 })] };
    const calibrator = ConfidenceCalibrator.load(writeJson(dir, 'trees.json', calibrationV2(right, { model: nilModel, trainedPrevalence: 0.1, assumedPrevalence: 0.05 })));
    const sig = (z: number) => 1 / (1 + Math.exp(-z));
    const shift = Math.log(0.05 / 0.95) - Math.log(0.1 / 0.9);
    const at = (values: Record<number, number>) => Float64Array.from({ length: n }, (_, i) => values[i] ?? 0);
    // x0 = 1 (≤ 1: below, −2), x1 = 0 (≤ 0: below, −1).
    const a = at({ 0: 1 });
    assert.ok(Math.abs(calibrator.probability(a) - sig(0.5 + 0.1 * (-2 + 0.7)) * (1 - sig(-1 + 0.5 * -1 + shift))) < 1e-12);
    // x0 = 2 and x2 = 0.6: above, above (3); x1 = 0.1: above (2).
    const b = at({ 0: 2, 1: 0.1, 2: 0.6 });
    assert.ok(Math.abs(calibrator.probability(b) - sig(0.5 + 0.1 * (3 + 0.7)) * (1 - sig(-1 + 0.5 * 2 + shift))) < 1e-12);
  });
});

test('a format-1 file and the same logistic parts in format 2 give the same confidence', () => {
  withDir((dir) => {
    const v1 = calibration();
    const { mean, scale, weights, bias } = v1 as { mean: number[]; scale: number[]; weights: number[]; bias: number };
    const nilV1 = { mean, scale, weights: weights.map((w) => -w), bias: -2, trainedPrevalence: 0.1, assumedPrevalence: 0.05 };
    const one = ConfidenceCalibrator.load(writeJson(dir, 'v1.json', { ...v1, nil: nilV1 }));
    const two = ConfidenceCalibrator.load(writeJson(dir, 'v2.json', calibrationV2({ kind: 'logistic', mean, scale, weights, bias }, { model: { kind: 'logistic', mean, scale, weights: nilV1.weights, bias: -2 }, trainedPrevalence: 0.1, assumedPrevalence: 0.05 })));
    assert.equal(one.file.format, CALIBRATION_FORMAT, 'read as format 2');
    for (const k of [0, 1, 2]) {
      const x = Float64Array.from({ length: n }, (_, i) => ((i + k) % 4) / 3);
      assert.equal(one.probability(x), two.probability(x));
    }
  });
});

test('a bad format-2 file is refused with BAD_CALIBRATION, naming what is wrong', () => {
  withDir((dir) => {
    const ok = { kind: 'trees', base: 0, rate: 0.1, trees: [{ leaf: 1 }] };
    const cases: [string, unknown, RegExp][] = [
      ['a split on a feature the linker does not compute', calibrationV2({ ...ok, trees: [split(n, 0, { leaf: 1 }, { leaf: 0 })] }), new RegExp(`feature ${n}`)],
      ['no trees', calibrationV2({ ...ok, trees: [] }), /trees/],
      ['a node with an unknown key', calibrationV2({ ...ok, trees: [{ leaf: 1, weight: 2 }] }), /trees/],
      ['a part without kind', calibrationV2({ base: 0, rate: 0.1, trees: [{ leaf: 1 }] }), /kind/],
      ['a zero rate', calibrationV2({ ...ok, rate: 0 }), /rate/],
      ['a logistic part of the wrong length', calibrationV2({ kind: 'logistic', mean: [0], scale: [1], weights: [1], bias: 0 }), /must each have/],
      ['a NIL part without prevalences', calibrationV2(ok, { model: ok }), /Prevalence/],
      ['a NIL threshold above 1', { ...calibrationV2(ok), nilConfidence: 1.5 }, /nilConfidence/],
      ['a NIL tree on a missing feature', calibrationV2(ok, { model: { ...ok, trees: [split(n + 3, 0, { leaf: 1 }, { leaf: 0 })] }, trainedPrevalence: 0.1, assumedPrevalence: 0.05 }), /nil\.trees/],
    ];
    for (const [name, file, message] of cases) {
      const path = writeJson(dir, 'bad.json', file);
      assert.throws(() => ConfidenceCalibrator.load(path), (error: unknown) => badCalibration(error) && message.test((error as Error).message), name);
    }
  });
});

test('with a non-entity part, P(in KB) is P(names a concept) · P(in KB | names one), each part at its assumed prevalence', () => {
  withDir((dir) => {
    const zeros = Array.from({ length: n }, () => 0);
    const ones = Array.from({ length: n }, () => 1);
    const logistic = (weight0: number, bias: number) => ({ kind: 'logistic', mean: zeros, scale: ones, weights: Array.from({ length: n }, (_, i) => (i === 0 ? weight0 : 0)), bias });
    const nil = { model: logistic(2, -1), trainedPrevalence: 0.1, assumedPrevalence: 0.05 };
    const nonEntity = { model: logistic(-3, 0.5), trainedPrevalence: 0.2, assumedPrevalence: 0.05 };
    const both = ConfidenceCalibrator.load(writeJson(dir, 'both.json', { ...calibrationV2(logistic(0, 1), nil), nonEntity }));
    const nilOnly = ConfidenceCalibrator.load(writeJson(dir, 'nil.json', calibrationV2(logistic(0, 1), nil)));
    const at = (x0: number) => Float64Array.from({ length: n }, (_, i) => (i === 0 ? x0 : 0));
    const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
    const shift = (trained: number, assumed: number) => Math.log(assumed / (1 - assumed)) - Math.log(trained / (1 - trained));
    for (const x0 of [-1, 0, 0.4, 2]) {
      const x = at(x0);
      const named = 1 - sigmoid(-3 * x0 + 0.5 + shift(0.2, 0.05));
      assert.ok(Math.abs(both.inKbProbability(x) - named * nilOnly.inKbProbability(x)) < 1e-12);
      assert.ok(Math.abs(both.probability(x) - sigmoid(1) * both.inKbProbability(x)) < 1e-12, 'confidence = P(right | in KB) · P(in KB)');
    }
    assert.ok(both.inKbProbability(at(-2)) < 0.1 && nilOnly.inKbProbability(at(-2)) > 0.9, 'a likely non-entity is likely not in the KB, whatever the NIL part says');
    const entityOnly = ConfidenceCalibrator.load(writeJson(dir, 'entity.json', { ...calibrationV2(logistic(0, 1)), nonEntity }));
    assert.ok(Math.abs(entityOnly.inKbProbability(at(0)) - (1 - sigmoid(0.5 + shift(0.2, 0.05)))) < 1e-12, 'the non-entity part alone');
    for (const bad of [{ ...nonEntity, model: { ...nonEntity.model, weights: [1] } }, { ...nonEntity, assumedPrevalence: 1 }, { ...nonEntity, extra: 1 }]) {
      assert.throws(() => ConfidenceCalibrator.load(writeJson(dir, 'bad.json', { ...calibrationV2(logistic(0, 1), nil), nonEntity: bad })), badCalibration);
    }
  });
});
