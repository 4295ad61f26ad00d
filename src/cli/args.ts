import { parseArgs, type ParseArgsConfig } from 'node:util';
import { InputError } from '../kb/errors.ts';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * Strict flag parsing for every command: unknown flags, missing values and a flag that takes one
 * value given twice become an InputError with a one-line reason, so the CLI exits non-zero instead
 * of guessing (node's parseArgs keeps the last of `--corpus a --corpus b` silently).
 */
export function parseFlags<T extends Options>(argv: string[], options: T, allowPositionals = false) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals, tokens: true });
  } catch (error) {
    throw new InputError((error as Error).message, 'BAD_FLAGS');
  }
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option' || options[token.name]?.multiple) continue;
    if (seen.has(token.name)) throw new InputError(`--${token.name} given more than once (it takes one value)`, 'BAD_FLAGS');
    seen.add(token.name);
  }
  return { values: parsed.values, positionals: parsed.positionals };
}

export function requireString(value: string | boolean | undefined, flag: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new InputError(`missing required flag --${flag}`, 'BAD_FLAGS');
  return value;
}

/** `above` / `below`: the value must be strictly greater / smaller (a duration of 0 is no window). */
export function parseNumberFlag(value: string | boolean | undefined, flag: string, fallback: number, opts: { min?: number; above?: number; max?: number; below?: number; integer?: boolean } = {}): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value !== 'string' || value.trim() === '' || !Number.isFinite(n)) throw new InputError(`--${flag} must be a number, got '${String(value)}'`, 'BAD_FLAGS');
  if (opts.integer && !Number.isInteger(n)) throw new InputError(`--${flag} must be an integer, got '${value}'`, 'BAD_FLAGS');
  if (opts.min !== undefined && n < opts.min) throw new InputError(`--${flag} must be ≥ ${opts.min}, got ${n}`, 'BAD_FLAGS');
  if (opts.above !== undefined && n <= opts.above) throw new InputError(`--${flag} must be > ${opts.above}, got ${n}`, 'BAD_FLAGS');
  if (opts.max !== undefined && n > opts.max) throw new InputError(`--${flag} must be ≤ ${opts.max}, got ${n}`, 'BAD_FLAGS');
  if (opts.below !== undefined && n >= opts.below) throw new InputError(`--${flag} must be < ${opts.below}, got ${n}`, 'BAD_FLAGS');
  return n;
}

/** A `--types` regular expression (NER types to keep), or undefined when not given. */
export function parseTypesFlag(value: string | undefined): RegExp | undefined {
  if (value === undefined) return undefined;
  try {
    return new RegExp(value);
  } catch (error) {
    throw new InputError(`--types is not a valid regular expression: ${(error as Error).message}`, 'BAD_FLAGS');
  }
}
