import { performance } from 'node:perf_hooks';
import type { Command } from '../command.ts';
import { parseFlags } from '../args.ts';
import { InputError } from '../../kb/errors.ts';
import { loadKb } from '../../kb/load.ts';
import { KB_FLAG_OPTIONS, KB_FLAGS_HELP, KB_FORMATS_HELP, kbLoadRequest } from '../kb-flags.ts';
import { writeConceptJsonl, writeConceptJsonlFile } from '../../kb/jsonl-writer.ts';

const usage = `Usage: cuilink kb export --kb FILE [--kb FILE ...] [options]

Loads one or more knowledge-base files, merges concepts that share an id, and writes them as
concept JSONL (docs/kb-jsonl.md), sorted by id. The file's sha256 equals the KB checksum that
index manifests record.

${KB_FORMATS_HELP}

Options:
${KB_FLAGS_HELP}
  --format jsonl        output format (only jsonl)
  --out FILE|-          output file, '-' for stdout (default '-')
  -h, --help            this text

Prints a one-line summary (concepts, names, seconds) to stderr. Names are counted as written
(preferred name + synonyms); 'index build' encodes one vector per distinct normalized name of a
concept, so its count is lower and it says how many were merged.`;

export const kbExport: Command = {
  name: 'kb export',
  summary: 'Load KB files (UMLS, OBO, OBO-Graph, CTD, BioSyn, JSONL) and write concept JSONL',
  usage,
  async run(argv) {
    const { values } = parseFlags(argv, {
      ...KB_FLAG_OPTIONS,
      format: { type: 'string', default: 'jsonl' },
      out: { type: 'string', default: '-' },
    });
    if (values.format !== 'jsonl') throw new InputError(`--format must be jsonl, got '${values.format}'`, 'BAD_FLAGS');
    const { paths, options } = kbLoadRequest(values);
    const started = performance.now();
    const store = await loadKb(paths, options);
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
