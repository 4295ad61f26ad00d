import { z } from 'zod';
import { linkConfigSchema } from '../../src/link/link-config.ts';

/** The keys of an object block of the link config (`rerank`, `query` …), or undefined for a value or a record (`typeFilter`). */
function blockKeys(schema: z.ZodTypeAny): string[] | undefined {
  let inner = schema;
  while (inner instanceof z.ZodDefault || inner instanceof z.ZodOptional) inner = inner._def.innerType as z.ZodTypeAny;
  return inner instanceof z.ZodObject ? Object.keys(inner.shape as object) : undefined;
}

/**
 * The link-config keys a text that lists them (the --link-config help, README's "Command line")
 * leaves out: every top-level key must be named; a block written out as `key {a, b}` must name each
 * of its keys, or say it leaves some out with `…`. A block named without braces (`memory`) defers
 * to its own document (`deferred`: block → that document's text, which must name each of its keys).
 */
export function linkConfigKeysMissing(text: string, deferred: Record<string, string> = {}): string[] {
  const flat = text.replace(/\s+/g, ' ');
  const missing: string[] = [];
  for (const [key, schema] of Object.entries(linkConfigSchema.shape)) {
    if (!new RegExp(`(?<![\\w.])${key}\\b`).test(flat)) {
      missing.push(key);
      continue;
    }
    const keys = blockKeys(schema);
    if (keys === undefined) continue;
    const braces = new RegExp(`(?<![\\w.])${key} \\{([^}]*)\\}`).exec(flat)?.[1];
    const elsewhere = deferred[key];
    const listed = braces ?? elsewhere;
    if (listed === undefined || (braces !== undefined && braces.includes('…'))) continue;
    for (const inner of keys) if (!new RegExp(`\\b${inner}\\b`).test(listed)) missing.push(`${key}.${inner}`);
  }
  return missing;
}
