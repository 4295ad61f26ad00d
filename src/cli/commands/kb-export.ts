import { performance } from 'node:perf_hooks';
import type { Command } from '../command.ts';
import { parseFlags } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { loadKb } from '../../kb/load.ts';
import { KB_FORMATS, type KbFormat } from '../../kb/kb-format.ts';
import { ALL_SYNONYM_SCOPES } from '../../kb/synonym-scope.ts';
import { writeConceptJsonl, writeConceptJsonlFile } from '../../kb/jsonl-writer.ts';

const usage = `Usage: cuilink kb export --kb FILE [--kb FILE ...] [options]

Loads one or more knowledge-base files, merges concepts that share an id, and writes them as
concept JSONL (docs/kb-jsonl.md), sorted by id. The file's sha256 equals the KB checksum that
index manifests record.

Input formats (detected from name and content, or forced with --kb-format):
  umls      MRCONSO.RRF (MRSTY.RRF / MRREL.RRF read from the same directory)
  obo       OBO 1.2/1.4 (doid.obo)           obograph  OBO-Graph JSON (hp.json)
  ctd       CTD MEDIC CTD_diseases.tsv       biosyn    'ids||name|name' dictionary
  jsonl     concept JSONL
  Any of them may be gzipped.

Options:
  --kb FILE             KB file (repeatable)
  --kb-format NAME      force the input format (${KB_FORMATS.join('|')})
  --format jsonl        output format (only jsonl)
  --out FILE|-          output file, '-' for stdout (default '-')
  --all-synonyms        OBO: keep NARROW and BROAD synonyms too (default EXACT, RELATED)
  --umls-lang L,L       UMLS languages (default ENG; 'all' for every language)
  --umls-sab A,B        UMLS source vocabularies to keep (default all)
  --umls-tui T047,...   UMLS semantic types to keep (default all)
  --umls-keep-suppressed  keep SUPPRESS=O/E/Y rows
  -h, --help            this text

Prints a one-line summary (concepts, names, seconds) to stderr.`;

function csv(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

export const kbExport: Command = {
  name: 'kb export',
  summary: 'Load KB files (UMLS, OBO, OBO-Graph, CTD, BioSyn, JSONL) and write concept JSONL',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      kb: { type: 'string', multiple: true },
      'kb-format': { type: 'string' },
      format: { type: 'string', default: 'jsonl' },
      out: { type: 'string', default: '-' },
      'all-synonyms': { type: 'boolean', default: false },
      'umls-lang': { type: 'string' },
      'umls-sab': { type: 'string' },
      'umls-tui': { type: 'string' },
      'umls-keep-suppressed': { type: 'boolean', default: false },
    });
    const paths = values.kb ?? [];
    if (paths.length === 0) throw new InputError('missing required flag --kb', 'BAD_FLAGS');
    if (values.format !== 'jsonl') throw new InputError(`--format must be jsonl, got '${values.format}'`, 'BAD_FLAGS');
    const kbFormat = values['kb-format'];
    if (kbFormat !== undefined && !KB_FORMATS.includes(kbFormat as KbFormat)) {
      throw new InputError(`--kb-format must be one of ${KB_FORMATS.join(', ')}, got '${kbFormat}'`, 'BAD_FLAGS');
    }
    const lang = csv(values['umls-lang']);
    const started = performance.now();
    const store = await loadKb(paths, {
      format: kbFormat as KbFormat | undefined,
      synonymScopes: values['all-synonyms'] ? ALL_SYNONYM_SCOPES : undefined,
      umls: {
        languages: lang === undefined ? undefined : lang.some((l) => l.toLowerCase() === 'all') ? [] : lang,
        sources: csv(values['umls-sab']),
        semanticTypes: csv(values['umls-tui']),
        keepSuppressed: values['umls-keep-suppressed'],
      },
    });
    const concepts = store.sorted();
    if (values.out === '-') {
      try {
        await writeConceptJsonl(concepts, process.stdout);
      } catch (error) {
        // The reader closed the pipe (`| head`): not a failure of the export.
        if ((error as { code?: string }).code === 'EPIPE') return 0;
        throw error;
      }
    } else {
      await writeConceptJsonlFile(concepts, values.out);
    }
    const seconds = (performance.now() - started) / 1000;
    console.error(`kb export: ${store.size} concepts, ${store.nameCount} names from ${paths.length} file(s) in ${seconds.toFixed(2)} s → ${values.out === '-' ? 'stdout' : values.out}`);
    return 0;
  },
};
