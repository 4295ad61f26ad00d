import { writeFileSync } from 'node:fs';
import type { Command } from '../command.ts';
import { parseFlags, parseNumberFlag } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { readPredictions } from '../../eval/prediction-file.ts';
import { approximateRandomization, pairPredictions, type ComparisonResult } from '../../eval/randomization-test.ts';

const usage = `Usage: cuilink compare A.jsonl B.jsonl [--shuffles 10000] [--seed N] [--out FILE.json]

Approximate randomization test between two per-mention prediction files written by
'cuilink eval --predictions'. Mentions are paired by (note id, mention id); both files must
cover exactly the same mentions. For each metric prints A, B, the difference B − A and its
p-value (r + 1) / (R + 1), r the shuffles (outputs swapped per mention with probability ½)
whose absolute difference is at least the observed one.

Options:
  --shuffles R     number of shuffles (default 10000, at least 1)
  --seed N         RNG seed (default 1): the same seed gives the same p-values
  --out FILE       also write the result as JSON
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
    const { values, positionals } = parseFlags(argv, { shuffles: { type: 'string' }, seed: { type: 'string' }, out: { type: 'string' } }, true);
    if (positionals.length !== 2) throw new InputError(`expected two prediction files, got ${positionals.length}`, 'BAD_FLAGS');
    const shuffles = parseNumberFlag(values.shuffles, 'shuffles', 10_000, { min: 1, integer: true });
    const seed = parseNumberFlag(values.seed, 'seed', 1, { integer: true });
    const names = positionals as [string, string];
    const [a, b] = await Promise.all(names.map((file) => readPredictions(file)));
    const result = approximateRandomization(pairPredictions(a!, b!, names), { shuffles, seed });
    console.log(formatComparison(result, names));
    if (values.out !== undefined) {
      try {
        writeFileSync(values.out, `${JSON.stringify({ a: names[0], b: names[1], ...result }, null, 2)}\n`);
      } catch (error) {
        throw new InputError(`cannot write ${values.out}: ${(error as Error).message}`, 'OUTPUT_ERROR', error);
      }
    }
    return 0;
  },
};
