import { InputError } from '../kb/errors.ts';
import { KB_FORMATS, type KbFormat } from '../kb/kb-format.ts';
import type { KbLoadOptions } from '../kb/load.ts';
import { ALL_SYNONYM_SCOPES } from '../kb/synonym-scope.ts';

/** The KB-loading flags shared by `kb export` and `index build`. */
export const KB_FLAG_OPTIONS = {
  kb: { type: 'string', multiple: true },
  'kb-supplement': { type: 'string', multiple: true },
  'xref-names': { type: 'string', multiple: true },
  'kb-format': { type: 'string' },
  'all-synonyms': { type: 'boolean', default: false },
  'umls-lang': { type: 'string' },
  'umls-sab': { type: 'string' },
  'umls-tui': { type: 'string' },
  'umls-keep-suppressed': { type: 'boolean', default: false },
} as const;

export const KB_FLAGS_HELP = `  --kb FILE             KB file (repeatable)
  --kb-supplement FILE  older release read after the KB: only its concepts whose ids (and alt
                        ids) the KB does not know are added, e.g. ids retired since (repeatable)
  --xref-names FILE     another vocabulary read for its names only: a concept of it whose id or
                        cross-references lead to exactly one KB concept gives that concept its
                        names, looked up only when no KB name matches a mention (repeatable)
  --kb-format NAME      force the input format (${KB_FORMATS.join('|')})
  --all-synonyms        OBO: keep NARROW and BROAD synonyms too (default EXACT, RELATED)
  --umls-lang L,L       UMLS languages (default ENG; 'all' for every language)
  --umls-sab A,B        UMLS source vocabularies to keep (default all)
  --umls-tui T047,...   UMLS semantic types to keep (default all)
  --umls-keep-suppressed  keep SUPPRESS=O/E/Y rows`;

export const KB_FORMATS_HELP = `Input formats (detected from name and content, or forced with --kb-format):
  umls      MRCONSO.RRF (MRSTY.RRF / MRREL.RRF read from the same directory)
  obo       OBO 1.2/1.4 (doid.obo)           obograph  OBO-Graph JSON (hp.json)
  ctd       CTD MEDIC CTD_diseases.tsv       biosyn    'ids||name|name' dictionary
  jsonl     concept JSONL
  Any of them may be gzipped. The --umls-* flags need a UMLS file among the KB files (supplements
  and xref-name files count), --all-synonyms an OBO or OBO-Graph one; otherwise they are refused.`;

interface KbFlagValues {
  kb?: string[];
  'kb-supplement'?: string[];
  'xref-names'?: string[];
  'kb-format'?: string;
  'all-synonyms'?: boolean;
  'umls-lang'?: string;
  'umls-sab'?: string;
  'umls-tui'?: string;
  'umls-keep-suppressed'?: boolean;
}

function csv(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

/** The KB paths and loader options the flags ask for; InputError on a bad value. */
export function kbLoadRequest(values: KbFlagValues, required = true): { paths: string[]; options: KbLoadOptions } {
  const paths = values.kb ?? [];
  if (required && paths.length === 0) throw new InputError('missing required flag --kb', 'BAD_FLAGS');
  const kbFormat = values['kb-format'];
  if (kbFormat !== undefined && !KB_FORMATS.includes(kbFormat as KbFormat)) {
    throw new InputError(`--kb-format must be one of ${KB_FORMATS.join(', ')}, got '${kbFormat}'`, 'BAD_FLAGS');
  }
  const lang = csv(values['umls-lang']);
  return {
    paths,
    options: {
      format: kbFormat as KbFormat | undefined,
      supplements: values['kb-supplement'] ?? [],
      xrefNameSources: values['xref-names'] ?? [],
      synonymScopes: values['all-synonyms'] ? ALL_SYNONYM_SCOPES : undefined,
      umls: {
        languages: lang === undefined ? undefined : lang.some((l) => l.toLowerCase() === 'all') ? [] : lang,
        sources: csv(values['umls-sab']),
        semanticTypes: csv(values['umls-tui']),
        keepSuppressed: values['umls-keep-suppressed'] ?? false,
      },
    },
  };
}
