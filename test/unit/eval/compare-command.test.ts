import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compare } from '../../../src/cli/commands/compare.ts';
import { readPredictions, writePredictions } from '../../../src/eval/prediction-file.ts';
import type { ScoredMention } from '../../../src/eval/metrics/mention-record.ts';
import { assignGroupedCalibrationVariance } from '../../../src/eval/metrics/calibration-test.ts';
import { computeMetrics } from '../../../src/eval/metrics/metrics-accumulator.ts';

function mention(i: number, hit: boolean): ScoredMention {
  return {
    noteId: 'n1', mentionId: `${i}-${i + 3}`, goldIds: ['MESH:D000001'], predicted: hit ? ['MESH:D000001'] : ['MESH:D000002'], nil: false, topScore: 0.9, label: 'Disease', semanticTypes: ['T047'],
    scores: { hit1: hit, hit5: hit, reciprocalRank: hit ? 1 : 0, similarity: hit ? 1 : 0, ndcg5: hit ? 1 : 0, goldNil: false, predictedNil: false, confidence: 0.9 },
  };
}

async function captureStdout(fn: () => Promise<number>): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const original = console.log;
  console.log = (...args: unknown[]) => void lines.push(args.join(' '));
  try {
    return { code: await fn(), out: lines.join('\n') };
  } finally {
    console.log = original;
  }
}

test('prediction files round-trip and `compare` on identical files reports p = 1', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-compare-'));
  try {
    const mentions = Array.from({ length: 30 }, (_, i) => mention(i, i % 3 !== 0));
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl');
    await writePredictions(a, mentions);
    await writePredictions(b, [...mentions].reverse());
    assert.deepEqual(await readPredictions(a), mentions);
    const { code, out } = await captureStdout(() => compare.run([a, b, '--shuffles', '200', '--seed', '5']));
    assert.equal(code, 0);
    assert.match(out, /30 paired mentions, 200 shuffles, seed 5/);
    assert.match(out, /acc1 +0\.6667 +0\.6667 +\+0\.0000 +1\.0000/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`compare` rejects files that do not cover the same mentions and malformed lines', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-compare-'));
  try {
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl');
    await writePredictions(a, [mention(0, true), mention(1, true)]);
    await writePredictions(b, [mention(0, true)]);
    await assert.rejects(compare.run([a, b]), /n1\/1-4 is in .*a\.jsonl but not in .*b\.jsonl/);
    writeFileSync(b, `${JSON.stringify(mention(0, true))}\n{"noteId": 3}\n`);
    await assert.rejects(compare.run([a, b]), /b\.jsonl:2: 'noteId' must be a string/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`compare --misses` counts, per error class, what B fixes and breaks', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-compare-'));
  try {
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl');
    // A misses 0, 1, 2; B misses 2 and 3.
    await writePredictions(a, [0, 1, 2, 3].map((i) => mention(i, i > 2)));
    await writePredictions(b, [0, 1, 2, 3].map((i) => mention(i, i < 2)));
    const miss = (i: number, errorClass: string) => JSON.stringify({ noteId: 'n1', mentionId: `${i}-${i + 3}`, text: 'x', errorClass });
    const ma = join(dir, 'a-misses.jsonl');
    const mb = join(dir, 'b-misses.jsonl');
    writeFileSync(ma, [miss(0, 'abbreviation'), miss(1, 'abbreviation'), miss(2, 'synonym')].join('\n') + '\n');
    writeFileSync(mb, [miss(2, 'hierarchy'), miss(3, 'hierarchy')].join('\n') + '\n');
    const out = join(dir, 'out.json');
    const { code, out: printed } = await captureStdout(() => compare.run([a, b, '--shuffles', '50', '--misses', `${ma},${mb}`, '--out', out]));
    assert.equal(code, 0);
    assert.match(printed, /abbreviation +2 +0 +0/);
    assert.match(printed, /hierarchy +0 +1 +0/);
    assert.match(printed, /synonym +0 +0 +1/);
    const { missChanges } = JSON.parse(readFileSync(out, 'utf8')) as { missChanges: { errorClass: string; fixed: number; broken: number }[] };
    assert.deepEqual(missChanges.map((c) => [c.errorClass, c.fixed, c.broken]), [['abbreviation', 2, 0], ['hierarchy', 0, 1], ['synonym', 0, 0]]);
    await assert.rejects(compare.run([a, b, '--misses', ma]), /--misses takes two files/);
    writeFileSync(mb, '{"noteId":"n1"}\n');
    await assert.rejects(compare.run([a, b, '--misses', `${ma},${mb}`]), /b-misses\.jsonl:1: 'noteId' and 'mentionId' must be strings/);
    writeFileSync(mb, `${miss(3, 'typo')}\n`);
    await assert.rejects(compare.run([a, b, '--misses', `${ma},${mb}`]), /b-misses\.jsonl:1: 'errorClass' must be one of nil, composite/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('prediction rows written before `confidence` was recorded still load and count in the ECE as they did; rows without a calibrated confidence stay out', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-compare-'));
  try {
    // An old row: no `confidence` beside topScore, scores.confidence the top score clamped (what mention() builds).
    const old = Array.from({ length: 30 }, (_, i) => mention(i, i % 3 !== 0));
    // The same mentions from a run whose misses had no calibrated confidence (no candidates, say).
    const current = old.map((m): ScoredMention => (m.scores.hit1 ? { ...m, confidence: 0.9 } : { ...m, confidence: null, scores: { ...m.scores, confidence: null } }));
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl');
    writeFileSync(a, old.map((m) => `${JSON.stringify(m)}\n`).join(''));
    await writePredictions(b, current);
    assert.deepEqual(await readPredictions(a), old);
    assert.deepEqual(await readPredictions(b), current);
    const out = join(dir, 'out.json');
    assert.equal((await captureStdout(() => compare.run([a, b, '--shuffles', '50', '--out', out]))).code, 0);
    const ece = (JSON.parse(readFileSync(out, 'utf8')) as { metrics: { metric: string; a: number | null; b: number | null }[] }).metrics.find((m) => m.metric === 'ece')!;
    // A: all 30 rows at 0.9, 20 right: |20 − 27| / 30. B: the 20 right rows alone: |20 − 18| / 20.
    assert.ok(Math.abs(ece.a! - 7 / 30) < 1e-12, `A ${ece.a}`);
    assert.ok(Math.abs(ece.b! - 0.1) < 1e-12, `B ${ece.b}`);
    writeFileSync(b, `${JSON.stringify({ ...current[0], scores: { ...current[0]!.scores, confidence: 'high' } })}\n`);
    await assert.rejects(readPredictions(b), /b\.jsonl:1: 'scores\.confidence' must be a number from 0 to 1, or null/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('prediction rows keep each link\'s calibration variance; rows written before it count as lone links; a bad one is refused', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-compare-'));
  try {
    // n1's rows all link MESH:D000001 or all MESH:D000002: two groups of the calibration test.
    const rows = Array.from({ length: 12 }, (_, i) => mention(i, i % 4 !== 0));
    assignGroupedCalibrationVariance(rows, 10);
    assert.ok(rows.every((m) => m.scores.calibrationVariance! > 0.09 + 1e-9), 'grouped rows carry more than p(1 − p)');
    const file = join(dir, 'grouped.jsonl');
    await writePredictions(file, rows);
    const read = await readPredictions(file);
    assert.deepEqual(read, rows);
    assert.deepEqual(computeMetrics(read).overall, computeMetrics(rows).overall);
    const old = rows.map((m) => {
      const { calibrationVariance: _v, ...scores } = m.scores;
      return { ...m, scores };
    });
    const lone = rows.map((m) => ({ ...m, scores: { ...m.scores, calibrationVariance: 0.9 * (1 - 0.9) } }));
    assert.deepEqual(computeMetrics(old).overall, computeMetrics(lone).overall);
    for (const bad of ['-1', '"wide"', '1e999']) {
      writeFileSync(file, `${JSON.stringify(rows[0]).replace(/"calibrationVariance":[^,}]+/, `"calibrationVariance":${bad}`)}\n`);
      await assert.rejects(readPredictions(file), /grouped\.jsonl:1: 'scores\.calibrationVariance' must be a finite number ≥ 0/, bad);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The row of `m` as a file line, with `path` set to raw JSON (what JSON.stringify cannot write: 1e400). */
function lineWith(m: ScoredMention, path: string[], raw: string): string {
  const row = JSON.parse(JSON.stringify(m)) as Record<string, unknown>;
  const parent = path.slice(0, -1).reduce((node, key) => node[key] as Record<string, unknown>, row);
  parent[path.at(-1)!] = '\u0001';
  return JSON.stringify(row).replace('"\\u0001"', raw);
}

test('a score past what a double holds, out of [0, 1], or an id list of other than strings is refused naming the file and line', async () => {
  // 1e400 reads as Infinity: compare died with a RangeError (BigInt of an infinite sum). A
  // confidence of -0.5 went to bin -5 and out of the ECE; 1.5 made an ECE past 1.
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-compare-'));
  try {
    const rows = [0, 1, 2].map((i) => mention(i, i !== 1));
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl');
    await writePredictions(a, rows);
    const cases: [string[], string, RegExp][] = [
      [['scores', 'reciprocalRank'], '1e400', /'scores\.reciprocalRank' must be a number from 0 to 1/],
      [['scores', 'similarity'], '-1e400', /'scores\.similarity' must be a number from 0 to 1/],
      [['scores', 'ndcg5'], '1.5', /'scores\.ndcg5' must be a number from 0 to 1/],
      [['scores', 'confidence'], '-0.5', /'scores\.confidence' must be a number from 0 to 1, or null/],
      [['scores', 'confidence'], '1e308', /'scores\.confidence' must be a number from 0 to 1, or null/],
      [['topScore'], '1e400', /'topScore' must be a finite number/],
      [['confidence'], '-1e400', /'confidence' must be a finite number or null/],
      [['goldIds'], '["MESH:D000001",7]', /'goldIds' must be an array of strings/],
      [['predicted'], '[null]', /'predicted' must be an array of strings/],
      [['text'], '7', /'text' must be a string/],
    ];
    for (const [path, raw, reason] of cases) {
      writeFileSync(b, `${JSON.stringify(rows[0])}\n${JSON.stringify(rows[1])}\n${lineWith(rows[2]!, path, raw)}\n`);
      await assert.rejects(captureStdout(() => compare.run([a, b, '--shuffles', '20'])), (error: Error & { code?: string }) => {
        assert.equal(error.code, 'PARSE_ERROR', `${path.join('.')} ${raw}: ${error.stack}`);
        assert.match(error.message, /b\.jsonl:3: /);
        assert.match(error.message, reason);
        return true;
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`compare` refuses to pair a mention the two files score against other gold, label or text: they are not of the same corpus', async () => {
  // Before, only (note id, mention id) was matched: runs over two corpora (or two versions of one)
  // that share document ids and spans were compared as if one, with a p-value on unrelated rows.
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-compare-'));
  try {
    const rows = [0, 1, 2].map((i) => ({ ...mention(i, i !== 1), text: `mention ${i}` }));
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl');
    writeFileSync(a, rows.map((m) => `${JSON.stringify(m)}\n`).join(''));
    const edits: [Partial<ScoredMention & { text: string }>, RegExp][] = [
      [{ goldIds: ['MESH:D000009'] }, /mention n1\/1-4: .*a\.jsonl scores it against gold MESH:D000001, .*b\.jsonl against MESH:D000009/],
      [{ label: 'Chemical' }, /mention n1\/1-4: .*a\.jsonl labels it Disease, .*b\.jsonl Chemical/],
      [{ text: 'SECRET other words' }, /mention n1\/1-4: its text in .*a\.jsonl and .*b\.jsonl differs/],
    ];
    for (const [edit, reason] of edits) {
      writeFileSync(b, rows.map((m, i) => `${JSON.stringify(i === 1 ? { ...m, ...edit } : m)}\n`).join(''));
      await assert.rejects(captureStdout(() => compare.run([a, b, '--shuffles', '20'])), (error: Error & { code?: string }) => {
        assert.equal(error.code, 'BAD_PREDICTIONS', error.stack);
        assert.match(error.message, reason);
        assert.match(error.message, /not of the same corpus/);
        assert.doesNotMatch(error.message, /SECRET|mention 1/, 'no mention text in the message');
        return true;
      });
    }
    // Gold ids in another order are the same gold; a file without the text is paired on the rest.
    writeFileSync(b, rows.map((m, i) => `${JSON.stringify(i === 1 ? { ...m, goldIds: ['MESH:D000002', 'MESH:D000001'], text: undefined } : m)}\n`).join(''));
    writeFileSync(a, rows.map((m, i) => `${JSON.stringify(i === 1 ? { ...m, goldIds: ['MESH:D000001', 'MESH:D000002'] } : m)}\n`).join(''));
    assert.equal((await captureStdout(() => compare.run([a, b, '--shuffles', '20']))).code, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`compare` pairs a mention only with the same note and mention id, even where the two split around a NUL', async () => {
  // The join key was noteId + NUL + mentionId: A's (n1, "z\0m") and B's ("n1\0z", m) met as one mention.
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-compare-'));
  try {
    const rows = [0, 1].map((i) => mention(i, true));
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl');
    await writePredictions(a, [rows[0]!, { ...rows[1]!, mentionId: `z\u0000${rows[1]!.mentionId}` }]);
    await writePredictions(b, [rows[0]!, { ...rows[1]!, noteId: 'n1\u0000z' }]);
    await assert.rejects(captureStdout(() => compare.run([a, b, '--shuffles', '20'])), /is in .*a\.jsonl but not in .*b\.jsonl/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
