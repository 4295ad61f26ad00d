/**
 * Gold id fields as corpora write them. The evaluation protocol (shared/data/README.md): ids are
 * compared after normalization (bare MeSH `D005955` = `MESH:D005955`, `OMIM:` kept, spaces
 * stripped); a composite `A|B` or `A+B` is a set of acceptable ids; `-1` means "no concept" and
 * the annotation is skipped.
 */
import { normalizeId } from '../kb/ids.ts';

/**
 * The distinct normalized ids of a gold field, in the order written; empty when the field says
 * "no concept" (`-1`) or holds nothing.
 */
export function parseGoldIds(field: string): string[] {
  // A Set, not a scan of the list per id: a field of 400k ids took minutes.
  const ids = new Set<string>();
  for (const part of field.split(/[|+]/)) {
    const trimmed = part.trim();
    if (trimmed === '' || trimmed === '-1') continue;
    ids.add(normalizeId(trimmed));
  }
  return [...ids];
}
