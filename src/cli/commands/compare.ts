import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { readPredictions } from '../../eval/prediction-file.ts';
import { missChanges, readMisses, type MissRecord } from '../../eval/error-report.ts';
import { approximateRandomization, pairPredictions, type ComparisonResult } from '../../eval/randomization-test.ts';
import { writeOutput } from '../output-files.ts';

const usage = `Usage: cuilink compare A.jsonl B.jsonl [--shuffles 10000] [--seed N] [--out FILE.json]
                      [--misses A-misses.jsonl,B-misses.jsonl]

Approximate randomization test between two per-mention prediction files written by
'cuilink eval --predictions'. Mentions are paired by (note id, mention id); both files must
cover exactly the same mentions of one corpus (a pair must agree on gold ids, label and text).
For each metric prints A, B, the difference B − A and its
p-value (r + 1) / (R + 1), r the shuffles (outputs swapped per mention with probability ½)
whose absolute difference is at least the observed one.

Options:
  --shuffles R     number of shuffles (default 10000, at least 1)
  --seed N         RNG seed (default 1): the same seed gives the same p-values
  --out FILE       also write the result as JSON
  --misses FA,FB   the two runs' 'cuilink eval --errors' files: per error class, the misses of A
                   that B fixes (A's class), B's new misses (B's class) and those both miss
  -h, --help       this text`;

function fmt(value: number | null, signed = false): string {
  if (value === null) return '—';
  return `${signed && value >= 0 ? '+' : ''}${value.toFixed(4)}`;
}

export function formatComparison(result: ComparisonResult, names: [string, string]): string {
  const lines = [`${result.n} paired mentions, ${result.shuffles} shuffles, seed ${result.seed}`, `A = ${names[0]}`, `B = ${names[1]}`, ''];
  lines.push(`${'metric'.padEnd(13)}${'A'.padStart(9)}${'B'.padStart(9)}${'B − A'.padStart(10)}${'p'.padStart(9)}`);
  for (const m of result.metrics) {
    lines.push(`${m.metric.padEnd(13)}${fmt(m.a).padStart(9)}${fmt(m.b).padStart(9)}${fmt(m.difference, true).padStart(10)}${(m.pValue === null ? '—' : m.pValue.toFixed(4)).padStart(9)}`);
  }
  return lines.join('\n');
}

export const compare: Command = {
  name: 'compare',
  summary: 'Approximate randomization test between two per-mention prediction files',
  usage,
  async run(argv) {
    const { values, positionals } = parseFlags(argv, { shuffles: { type: 'string' }, seed: { type: 'string' }, out: { type: 'string' }, misses: { type: 'string' } }, true);
    if (positionals.length !== 2) throw new InputError(`expected two prediction files, got ${positionals.length}`, 'BAD_FLAGS');
    const shuffles = parseNumberFlag(values.shuffles, 'shuffles', 10_000, { min: 1, integer: true });
    const seed = parseNumberFlag(values.seed, 'seed', 1, { integer: true });
    const names = positionals as [string, string];
    // Every input is read before the test runs: a bad --misses is reported before any table.
    const [a, b] = await Promise.all(names.map((file) => readPredictions(file)));
    const misses = values.misses === undefined ? undefined : await readMissFiles(values.misses);
    const result = approximateRandomization(pairPredictions(a!, b!, names), { shuffles, seed });
    console.log(formatComparison(result, names));
    const changes = misses === undefined ? undefined : missChanges(...misses);
    if (changes) {
      console.log(`\n${'error class'.padEnd(14)}${'fixed'.padStart(7)}${'broken'.padStart(8)}${'both miss'.padStart(11)}`);
      for (const c of changes) console.log(`${c.errorClass.padEnd(14)}${String(c.fixed).padStart(7)}${String(c.broken).padStart(8)}${String(c.stillMissed).padStart(11)}`);
    }
    if (values.out !== undefined) {
      writeOutput(values.out, `${JSON.stringify({ a: names[0], b: names[1], ...result, ...(changes ? { missChanges: changes } : {}) }, null, 2)}\n`, 'out');
    }
    return 0;
  },
};

/** The two `--errors` files of `--misses A,B`. */
async function readMissFiles(flag: string): Promise<[MissRecord[], MissRecord[]]> {
  const files = flag.split(',');
  if (files.length !== 2 || files.some((f) => f === '')) throw new InputError(`--misses takes two files separated by a comma, got ${JSON.stringify(flag)}`, 'BAD_FLAGS');
  const [a, b] = await Promise.all(files.map((file) => readMisses(file)));
  return [a!, b!];
}
