import { parseArgs, type ParseArgsConfig } from 'node:util';
import { InputError } from '../kb/errors.ts';
import { parseFlags } from './args.ts';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * parseFlags, and a flag that is not `multiple` given twice is an error: node's parseArgs keeps the
 * last value silently, so `--out a --out b` would write b and say nothing — for an import, a gold
 * file the operator did not ask for.
 */
export function parseSingleValueFlags<T extends Options>(argv: string[], options: T) {
  const parsed = parseFlags(argv, options);
  const { tokens } = parseArgs({ args: argv, options, strict: true, tokens: true });
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option' || options[token.name]?.multiple) continue;
    if (seen.has(token.name)) throw new InputError(`--${token.name} given more than once (it takes one value)`, 'BAD_FLAGS');
    seen.add(token.name);
  }
  return parsed;
}
