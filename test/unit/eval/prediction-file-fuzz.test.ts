import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { compare } from '../../../src/cli/commands/compare.ts';
import { makeEvalCommand } from '../../../src/cli/commands/eval.ts';
import { ParseError } from '../../../src/kb/errors.ts';
import type { LinkingCore } from '../../../src/link/types.ts';
import { capture } from '../../support/capture-console.ts';
import { fuzzPlan, guardedFuzzTest, int, pick, type CaseBuilder, type FuzzCase } from '../../support/guarded-fuzz.ts';
import { mutateBytes, mutateJson } from '../../support/input-mutations.ts';
import { fakeLinker, SAMPLE_TABLE } from './fake-linker.ts';

// `cuilink eval --predictions` writes one scored mention a line; `cuilink compare A B` reads two
// such files back, pairs them by (note id, mention id) and runs a randomization test on the pairs.
// Files a real eval wrote (two corpora, two linkers, with and without a calibrated confidence) are
// damaged as a disk or a hand edit damages them (bytes cut, flipped, BOMs, CR/CRLF, gzip; one line's
// JSON given wrong types, 1e400, out-of-range scores and confidences, fields removed or added; rows
// repeated, renamed, relabelled; the rows of another corpus renamed onto this one's mentions; keys
// that only collide once joined) and compared. The rule: a refusal is an InputError of the readers'
// codes naming the file (a PARSE_ERROR its line too), never another error or a hang; a comparison
// that runs took only rows the writer could have written, paired only the same mention of the same
// corpus (same gold ids, label and text), each once, and reports figures those rows give. It found
// 1e400 scores crash compare with a RangeError, out-of-range scores and confidences taken (a
// negative confidence left its mention out of the ECE), runs over different gold paired, and keys
// that collide once joined paired as one mention (regression tests: compare-command.test.ts). A
// failure names seed, case and mutation; rerun it alone with CUILINK_FUZZ_SEED=<seed> CUILINK_FUZZ_CASES=<case + 1>.

const PLAN = fuzzPlan([20_261_207, 23, 4_001], 250);
const CODES = ['PARSE_ERROR', 'INPUT_CORRUPT', 'BAD_PREDICTIONS'];
const INDEX = 'test/fixtures/eval/index';
const CORPORA = { sample: 'test/fixtures/eval/sample.PubTator', stream: 'test/fixtures/eval/stream-sample.PubTator' } as const;
type Corpus = keyof typeof CORPORA;

/** A second linker: other rankings, so that the two runs of a corpus differ. */
const OTHER_TABLE: Record<string, string[]> = {
  'colon cancer': ['MESH:D001943', 'MESH:D003110'],
  'breast cancer': ['MESH:D001943'],
  cancer: ['MESH:D009369', 'MESH:D001943'],
  anemia: ['MESH:D000740'],
  'breast and ovarian cancer': ['MESH:D010051', 'MESH:D001943'],
};

/** The fake linker with its score as a calibrated confidence: rows with `confidence` set and binned. */
function confidentLinker(table: Record<string, string[]>): LinkingCore {
  const core = fakeLinker(table);
  return {
    ...core,
    linkNotes: async (notes) => (await core.linkNotes(notes)).map((note) => ({ ...note, mentions: note.mentions.map((m) => ({ ...m, confidence: m.candidates.length > 0 ? m.score : null })) })),
  };
}

/** The lines `cuilink eval --predictions` writes for each corpus, one run per linker. */
async function writtenRuns(): Promise<Record<Corpus, string[][]>> {
  const dir = mkdtempSync(join(tmpdir(), 'cuilink-prediction-runs-'));
  const write = process.stderr.write.bind(process.stderr);
  // eval notes gold ids the index lacks on stderr: not this test's subject.
  process.stderr.write = () => true;
  try {
    const runs = { sample: [], stream: [] } as Record<Corpus, string[][]>;
    for (const corpus of Object.keys(CORPORA) as Corpus[]) {
      for (const [i, core] of [fakeLinker(SAMPLE_TABLE), confidentLinker(OTHER_TABLE), confidentLinker(SAMPLE_TABLE)].entries()) {
        const file = join(dir, `${corpus}-${i}.jsonl`);
        const { code } = await capture(() => makeEvalCommand(async () => core).run(['--index', INDEX, '--corpus', CORPORA[corpus], '--predictions', file]));
        assert.equal(code, 0);
        runs[corpus].push(readFileSync(file, 'utf8').split('\n').filter((line) => line !== ''));
      }
    }
    return runs;
  } finally {
    process.stderr.write = write;
    rmSync(dir, { recursive: true, force: true });
  }
}

type Row = Record<string, unknown> & { noteId: string; mentionId: string; scores: Record<string, unknown> };

/** A row with `path` set to raw JSON text (what JSON.stringify cannot write: 1e400, -0). */
function withRaw(line: string, path: string[], raw: string): string {
  const row = JSON.parse(line) as Record<string, unknown>;
  const parent = path.slice(0, -1).reduce((node, key) => node[key] as Record<string, unknown>, row);
  parent[path.at(-1)!] = '\u0001RAW\u0001';
  return JSON.stringify(row).replace('"\\u0001RAW\\u0001"', raw);
}

const FIELDS = [['scores', 'reciprocalRank'], ['scores', 'similarity'], ['scores', 'ndcg5'], ['scores', 'confidence'], ['scores', 'calibrationVariance'], ['scores', 'hit1'], ['topScore'], ['confidence'], ['goldIds'], ['predicted'], ['semanticTypes'], ['noteId'], ['mentionId'], ['label']];
const VALUES = ['1e400', '-1e400', '1e-400', '-0', '-0.5', '1.5', '2', '1e308', '-1e-9', '1.0000001', '0', '1', '0.5', 'null', '"0.5"', 'true', '[]', '{}', '[1]', '[null]', '["MESH:D003110",7]', '""', '"\\u0000"'];

/** One mutation of the pair (a, b) of prediction files, as lines; which file it touched. */
function mutatePair(random: () => number, a: string[], b: string[], other: string[]): { what: string; a: string[] | Buffer; b: string[] | Buffer; touched: 'a' | 'b' | 'both' } {
  const side = pick(random, ['a', 'b'] as const);
  const lines = side === 'a' ? [...a] : [...b];
  const set = (next: string[] | Buffer, what: string) => ({ what: `${side.toUpperCase()}: ${what}`, a: side === 'a' ? next : a, b: side === 'b' ? next : b, touched: side });
  const at = int(random, lines.length);
  switch (int(random, 11)) {
    case 0: {
      const mutated = mutateBytes(random, Buffer.from(`${lines.join('\n')}\n`));
      return set(mutated.bytes, mutated.what);
    }
    case 1: {
      const mutated = mutateJson(random, JSON.parse(lines[at]!));
      lines[at] = mutated.text.replaceAll('\n', ' ');
      return set(lines, `line ${at + 1}: ${mutated.what}`);
    }
    case 2:
    case 3: {
      const field = pick(random, FIELDS);
      const value = pick(random, VALUES);
      lines[at] = withRaw(lines[at]!, field, value);
      return set(lines, `line ${at + 1}: ${field.join('.')} := ${value}`);
    }
    case 4: {
      const row = JSON.parse(lines[at]!) as Row;
      const copy = { ...row, scores: { ...row.scores, hit1: !row.scores.hit1 } };
      lines.splice(int(random, lines.length + 1), 0, JSON.stringify(copy));
      return set(lines, `line ${at + 1}'s mention again, its hit1 flipped`);
    }
    case 5: {
      const row = JSON.parse(lines[at]!) as Row;
      const change = pick(random, ['gold ids', 'label', 'text', 'mention id'] as const);
      if (change === 'gold ids') row.goldIds = [...(row.goldIds as string[]), 'MESH:D999999'];
      else if (change === 'label') row.label = `${row.label}X`;
      else if (change === 'text') row.text = `${String(row.text)} (edited)`;
      else row.mentionId = `${row.mentionId}0`;
      lines[at] = JSON.stringify(row);
      return set(lines, `line ${at + 1}: ${change} changed`);
    }
    case 6: {
      // Keys that collide once note and mention ids are joined with NUL: A's (n, "z\0m") and B's ("n\0z", m).
      const row = JSON.parse(a[at]!) as Row;
      const sameKey = (line: string) => (JSON.parse(line) as Row).noteId === row.noteId && (JSON.parse(line) as Row).mentionId === row.mentionId;
      const nextA = a.map((line, i) => (i === at ? JSON.stringify({ ...row, mentionId: `z\u0000${row.mentionId}` }) : line));
      const nextB = b.map((line) => (sameKey(line) ? JSON.stringify({ ...(JSON.parse(line) as Row), noteId: `${row.noteId}\u0000z` }) : line));
      return { what: `both: line ${at + 1}'s key split otherwise around a NUL in A and B`, a: nextA, b: nextB, touched: 'both' };
    }
    case 7: {
      // Another corpus's rows renamed onto this corpus's mentions: same keys, other gold.
      const renamed = lines.map((line, i) => JSON.stringify({ ...(JSON.parse(other[i % other.length]!) as Row), noteId: (JSON.parse(line) as Row).noteId, mentionId: (JSON.parse(line) as Row).mentionId }));
      return set(renamed, `the other corpus's rows renamed onto this one's ${lines.length} mentions`);
    }
    case 8:
      return set(pick(random, [[], ['', '  '], lines.slice(0, 1)]), 'cut to at most one line');
    default: {
      // What leaves the rows as they were: a comparison must run, on them.
      const form = pick(random, ['lines reversed', 'BOM and CRLF', 'blank lines between', 'an extra field on every row', 'gzipped'] as const);
      if (form === 'lines reversed') return set(lines.reverse(), form);
      if (form === 'BOM and CRLF') return set(Buffer.from(`\uFEFF${lines.join('\r\n')}\r\n`), form);
      if (form === 'blank lines between') return set(lines.flatMap((line) => [line, ' ']), form);
      if (form === 'an extra field on every row') return set(lines.map((line) => JSON.stringify({ ...(JSON.parse(line) as Row), reviewer: { note: 'x' } })), form);
      return set(gzipSync(`${lines.join('\n')}\n`), form);
    }
  }
}

/** Why a parsed line is not a row the writer could have written, or undefined. */
function rowProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not an object';
  const row = value as Record<string, unknown>;
  const s = row.scores as Record<string, unknown>;
  const unit = (x: unknown) => typeof x === 'number' && x >= 0 && x <= 1;
  const strings = (x: unknown) => Array.isArray(x) && x.every((item) => typeof item === 'string');
  if (!['noteId', 'mentionId', 'label'].every((key) => typeof row[key] === 'string')) return 'an id or label that is no string';
  if (!['goldIds', 'predicted', 'semanticTypes'].every((key) => strings(row[key]))) return 'an id list that is not of strings';
  if (typeof row.nil !== 'boolean' || !Number.isFinite(row.topScore)) return 'nil or topScore';
  if (row.confidence !== undefined && row.confidence !== null && !Number.isFinite(row.confidence)) return `confidence ${String(row.confidence)}`;
  if (typeof s !== 'object' || s === null) return 'no scores';
  if (!['hit1', 'hit5', 'goldNil', 'predictedNil'].every((key) => typeof s[key] === 'boolean')) return 'a score flag that is no boolean';
  for (const key of ['reciprocalRank', 'similarity', 'ndcg5']) if (!unit(s[key])) return `scores.${key} ${String(s[key])}`;
  if (s.confidence !== null && !unit(s.confidence)) return `scores.confidence ${String(s.confidence)}`;
  if (s.calibrationVariance !== undefined && !(Number.isFinite(s.calibrationVariance) && (s.calibrationVariance as number) >= 0)) return `scores.calibrationVariance ${String(s.calibrationVariance)}`;
  return undefined;
}

/** The rows of a file as a reader must see them (gunzipped, a leading BOM dropped, CR, LF or CRLF ends, blank lines skipped). */
function referenceRows(file: string): { rows: Row[] } | { problem: string } {
  let bytes = readFileSync(file);
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      bytes = gunzipSync(bytes);
    } catch {
      return { problem: 'a damaged gzip file read as predictions' };
    }
  }
  const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
  const rows: Row[] = [];
  for (const [i, line] of text.split(/\r\n|\r|\n/).entries()) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return { problem: `line ${i + 1} is not JSON, and was taken` };
    }
    const problem = rowProblem(value);
    if (problem !== undefined) return { problem: `line ${i + 1} was taken with ${problem}` };
    rows.push(value as Row);
  }
  return { rows };
}

/** Gold ids are a set: a composite's ids in another order, or one repeated, are the same gold. */
const sameGold = (x: unknown, y: unknown) => JSON.stringify([...new Set(x as string[])].sort()) === JSON.stringify([...new Set(y as string[])].sort());

/** Why a comparison that ran is not one of the two files' rows, paired right, or undefined. */
function comparisonProblem(files: [string, string], out: string): string | undefined {
  const read = files.map(referenceRows);
  for (const [i, r] of read.entries()) if ('problem' in r) return `${'AB'[i]}: ${r.problem}`;
  const [a, b] = read.map((r) => (r as { rows: Row[] }).rows) as [Row[], Row[]];
  const key = (row: Row) => JSON.stringify([row.noteId, row.mentionId]);
  const byKey = new Map<string, Row>();
  for (const row of b) {
    if (byKey.has(key(row))) return `B holds mention ${key(row)} twice, and was compared`;
    byKey.set(key(row), row);
  }
  const seen = new Set<string>();
  for (const row of a) {
    if (seen.has(key(row))) return `A holds mention ${key(row)} twice, and was compared`;
    seen.add(key(row));
    const other = byKey.get(key(row));
    if (other === undefined) return `A's mention ${key(row)} is not in B, and the files were compared`;
    if (!sameGold(row.goldIds, other.goldIds) || row.label !== other.label || (typeof row.text === 'string' && typeof other.text === 'string' && row.text !== other.text)) return `mention ${key(row)} has other gold, label or text in A and B (not the same corpus), and was paired`;
  }
  if (seen.size !== byKey.size) return 'B holds mentions A lacks, and the files were compared';
  const result = JSON.parse(readFileSync(out, 'utf8')) as { n: number; metrics: { metric: string; a: number | null; b: number | null; difference: number | null; pValue: number | null }[] };
  if (result.n !== a.length) return `n ${result.n}, ${a.length} rows paired`;
  const metric = (name: string) => result.metrics.find((m) => m.metric === name)!;
  const mean = (rows: Row[], pick: (row: Row) => number) => (rows.length === 0 ? null : rows.reduce((sum, row) => sum + pick(row), 0) / rows.length);
  for (const [side, rows] of [['a', a], ['b', b]] as const) {
    const acc1 = mean(rows, (row) => Number(row.scores.hit1));
    const mrr = mean(rows, (row) => row.scores.reciprocalRank as number);
    if (metric('acc1')[side] !== acc1) return `acc1 of ${side.toUpperCase()} ${metric('acc1')[side]}, its rows give ${acc1}`;
    if ((mrr === null) !== (metric('mrr')[side] === null) || (mrr !== null && Math.abs(metric('mrr')[side]! - mrr) > 1e-8)) return `MRR of ${side.toUpperCase()} ${metric('mrr')[side]}, its rows give ${mrr}`;
    const binned = rows.filter((row) => row.scores.confidence !== null).length;
    const ece = metric('ece')[side];
    if ((binned === 0) !== (ece === null) || (ece !== null && !(ece >= 0 && ece <= 1))) return `ECE of ${side.toUpperCase()} ${ece} over ${binned} rows with a confidence`;
  }
  for (const m of result.metrics) {
    if (m.pValue !== null && !(m.pValue > 0 && m.pValue <= 1)) return `${m.metric}: p ${m.pValue}`;
    if (m.difference !== null && m.a !== null && m.b !== null && Math.abs(m.difference - (m.b - m.a)) > 1e-12) return `${m.metric}: difference ${m.difference}`;
  }
  return undefined;
}

function caseBuilder(runs: Record<Corpus, string[][]>) {
  return (random: () => number, _index: number, dir: string): FuzzCase => {
    const corpus = pick(random, ['sample', 'stream'] as const);
    const [x, y] = [pick(random, runs[corpus]), pick(random, runs[corpus])];
    const other = pick(random, runs[corpus === 'sample' ? 'stream' : 'sample']);
    // A tenth of the cases compare two corpora's files as they are.
    const plain = int(random, 10) === 0;
    const mutated = plain ? { what: 'files of two corpora', a: x, b: other, touched: 'both' as const } : mutatePair(random, x, y, other);
    const files: [string, string] = [join(dir, 'a.jsonl'), join(dir, 'b.jsonl')];
    for (const [i, content] of [mutated.a, mutated.b].entries()) writeFileSync(files[i]!, Array.isArray(content) ? content.map((line) => `${line}\n`).join('') : content);
    // A refusal must name the file the mutation touched (a pairing refusal names both); `dir` is in either.
    const file = mutated.touched === 'both' ? dir : files[mutated.touched === 'a' ? 0 : 1];
    return {
      what: `${corpus}: ${mutated.what}`,
      file,
      codes: CODES,
      run: async () => {
        const out = join(dir, 'out.json');
        try {
          await capture(() => compare.run([...files, '--shuffles', '20', '--seed', '3', '--out', out]));
        } catch (error) {
          if (error instanceof ParseError && !new RegExp(`${dir}/[ab]\\.jsonl:\\d+: `).test(error.message)) return `a PARSE_ERROR that names no file and line: ${error.message.slice(0, 300)}`;
          throw error;
        }
        return comparisonProblem(files, out);
      },
    };
  };
}

let build: CaseBuilder | undefined;
await guardedFuzzTest('damaged prediction files are compared only as the rows the writer wrote, of the same mentions, or refused naming the file', new URL(import.meta.url), PLAN, (...args) => build!(...args), {
  prepare: async () => (build = caseBuilder(await writtenRuns())),
});
