import { basename } from 'node:path';
import { InputError } from './errors.ts';
import { headLines } from './line-reader.ts';

export type KbFormat = 'umls' | 'obo' | 'obograph' | 'ctd' | 'biosyn' | 'jsonl';
export const KB_FORMATS: readonly KbFormat[] = ['umls', 'obo', 'obograph', 'ctd', 'biosyn', 'jsonl'];

/** UMLS side tables read through their MRCONSO, never on their own. */
export const UMLS_SIDE_TABLE = /^MR(STY|REL)\.RRF(\.gz)?$/i;

/**
 * Picks the loader for a KB file: by name first (`MRCONSO.RRF`, `.obo`, `.jsonl`, `.json` with
 * `graphs`, CTD `.tsv`, `.txt` with `||`, each optionally `.gz`), then by the first lines' content,
 * so a renamed or extension-less file still loads.
 */
export async function detectKbFormat(path: string): Promise<KbFormat> {
  const name = basename(path).replace(/\.gz$/i, '');
  if (/^MRCONSO\.RRF$/i.test(name)) return 'umls';
  if (UMLS_SIDE_TABLE.test(name)) throw new InputError(`${path}: pass MRCONSO.RRF; MRSTY.RRF and MRREL.RRF are read from its directory`, 'BAD_KB');
  const ext = /\.([A-Za-z]+)$/.exec(name)?.[1]?.toLowerCase();
  if (ext === 'obo') return 'obo';
  if (ext === 'jsonl' || ext === 'ndjson') return 'jsonl';
  const head = await headLines(path, 40);
  const byContent = sniff(head);
  if (ext === 'json' && (byContent === 'obograph' || byContent === undefined)) return 'obograph';
  if (byContent) return byContent;
  throw new InputError(`${path}: cannot tell the KB format (use --kb-format ${KB_FORMATS.join('|')})`, 'BAD_KB');
}

function sniff(head: string[]): KbFormat | undefined {
  const lines = head.filter((l) => l.trim().length > 0);
  const first = lines[0]?.trim() ?? '';
  const joined = head.join('\n');
  if (first.startsWith('format-version:') || first === '[Term]' || /^\[Term\]$/m.test(joined)) return 'obo';
  if (first.startsWith('{') && /"graphs"\s*:/.test(joined)) return 'obograph';
  if (first.startsWith('{') && /^\{\s*"id"\s*:/.test(first)) return 'jsonl';
  if (first.startsWith('{') && /"graphs"/.test(first) === false && lines.every((l) => l.trim().startsWith('{'))) return 'jsonl';
  if (lines.some((l) => /^#\s*DiseaseName\tDiseaseID/.test(l)) || lines.some((l) => !l.startsWith('#') && /^[^\t]+\t(MESH|OMIM):[^\t]+\t/.test(l))) return 'ctd';
  if (/^C\d{7}\|[A-Z]{3}\|/.test(first)) return 'umls';
  const data = lines.filter((l) => !l.startsWith('#'));
  if (data.length > 0 && data.every((l) => l.includes('||'))) return 'biosyn';
  return undefined;
}
